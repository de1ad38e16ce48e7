import { getTableColumns, is, sql, SQL, type Column } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import { jsonText } from "./batch-params.ts";
import { rows, type Executor } from "./client.ts";

/**
 * A multi-row insert whose text is the same for every number of rows: the rows go as one JSON
 * parameter, read by `json_populate_recordset` with the table's own row type (see batch-params.ts
 * for why the text must not grow with the batch). A column a row leaves out takes its default, as
 * in drizzle's `values()`; identity columns are the database's unless `identities` says the rows
 * carry theirs. Resolves to the rows inserted,
 * mapped as drizzle maps a select's (with `returning`), or to nothing.
 */
export async function insertRecords<T extends PgTable>(
  db: Executor,
  table: T,
  records: readonly T["$inferInsert"][],
  options: { onConflictDoNothing?: readonly Column[] | true; returning?: boolean; identities?: boolean } = {},
): Promise<T["$inferSelect"][]> {
  if (records.length === 0) return [];
  const all = Object.entries(getTableColumns(table));
  // `identities`: every row carries its identity, reserved before (`overriding system value`).
  const columns = options.identities ? all : all.filter(([, column]) => !column.generatedIdentity);
  const json = records.map((record) => {
    const out: Record<string, unknown> = {};
    for (const [key, column] of columns) {
      const value = (record as Record<string, unknown>)[key];
      if (value !== undefined) out[column.name] = value;
    }
    return out;
  });
  const names = sql.join(
    columns.map(([, column]) => sql.identifier(column.name)),
    sql`, `,
  );
  // A default applies where a row has no value: the column's SQL default, or its constant.
  const picks = sql.join(
    columns.map(([, column]) => {
      const name = sql`v.${sql.identifier(column.name)}`;
      if (!column.hasDefault || column.default === undefined) return name;
      return sql`coalesce(${name}, ${is(column.default, SQL) ? column.default : sql.param(column.default, column)})`;
    }),
    sql`, `,
  );
  const target = options.onConflictDoNothing;
  const conflict =
    target === true
      ? sql` on conflict do nothing`
      : target
        ? sql` on conflict (${sql.join(
            target.map((c) => sql.identifier(c.name)),
            sql`, `,
          )}) do nothing`
        : sql``;
  const overriding = options.identities ? sql` overriding system value` : sql``;
  const query = sql`insert into ${table} (${names})${overriding} select ${picks}
    from json_populate_recordset(null::${table}, ${jsonText(json)}::json) as v${conflict}${options.returning ? sql` returning *` : sql``}`;
  const raw = await rows<Record<string, unknown>>(db, query);
  if (!options.returning) return [];
  return raw.map((row) => {
    const out: Record<string, unknown> = {};
    for (const [key, column] of all) {
      const value = row[column.name];
      out[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
    }
    return out as T["$inferSelect"];
  });
}
