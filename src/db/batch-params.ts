import { sql, type Column, type SQL } from "drizzle-orm";

/**
 * A batch as one parameter. A statement whose text grows with its batch (an IN list, a VALUES list,
 * a multi-row insert) is a new prepared statement for every batch size, and postgres.js keeps every
 * statement it prepared on every pooled connection for as long as the connection lives: a soaking
 * daemon gathered ~330 of them (1.7 MB of SQL text, each held once per connection) in its first
 * minute and kept gathering. Passed as one array or JSON parameter, a statement's text is the same
 * for every size, so each connection prepares it once.
 */

type ArrayType = "bigint" | "text" | "timestamptz" | "uuid";

/** One element of an array literal, quoted: `"`, `\` escaped (the literal's own syntax). */
const element = (value: string | bigint | number | Date): string =>
  `"${(value instanceof Date ? value.toISOString() : String(value)).replace(/[\\"]/g, "\\$&")}"`;

/** `column = any($1::type[])`, the array sent as its text literal (both drivers bind it as text). */
export function anyOf(
  column: Column | SQL,
  values: readonly (string | bigint | number | Date)[],
  type: ArrayType,
): SQL {
  return sql`${column} = any(${`{${values.map(element).join(",")}}`}::${sql.raw(type)}[])`;
}

/**
 * A JSON text the database accepts: bigints as strings (their column's type parses them), NUL
 * characters dropped (no Postgres text holds one), lone surrogates replaced (reading the JSON into
 * rows refuses their escapes, where a text parameter's UTF-8 encoding replaced them).
 */
export function jsonText(rows: readonly object[]): string {
  const plain: object[] = new Array<object>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = plainRow(rows[i]!);
    // A value that is itself an object (an attempt log, say): the general path for the whole batch.
    if (row === null) return JSON.stringify(rows, jsonValue);
    plain[i] = row;
  }
  // No replacer: JSON.stringify's own path for plain values, which a replacer turns off (500 rows
  // of a close's shape: 0.65 against 0.86 ms).
  return JSON.stringify(plain);
}

/**
 * A flat row as JSON takes it with no replacer: its bigints as strings and its strings repaired, in
 * a copy made only when one needed it; null when a value is an object other than a Date (whose
 * toJSON gives a well-formed string either way).
 */
function plainRow(row: object): object | null {
  let copy: Record<string, unknown> | null = null;
  for (const key of Object.keys(row)) {
    const value = (row as Record<string, unknown>)[key];
    let out = value;
    if (typeof value === "bigint") out = String(value);
    else if (typeof value === "string") out = jsonValue(key, value);
    else if (typeof value === "object" && value !== null && !(value instanceof Date)) return null;
    if (out !== value) (copy ??= { ...row })[key] = out;
  }
  return copy ?? row;
}

/**
 * Every value of every batch passes here: a string is only copied when it needs a repair (the
 * copies of every prompt and output, made whether or not they held anything to repair, were most
 * of a batch's serialization).
 */
function jsonValue(_key: string, value: unknown): unknown {
  if (typeof value === "string")
    return value.isWellFormed() && !value.includes("\u0000") ? value : value.toWellFormed().replaceAll("\u0000", "");
  return typeof value === "bigint" ? String(value) : value;
}

/**
 * `json_to_recordset($1::json) as v(columns)`: rows as one JSON parameter, read as a relation
 * with the given column definitions (`id bigint, status text, …`; keys of each row by those names).
 * `json`, not `jsonb`: the text is read once, straight into the rows, where jsonb first builds its
 * own tree of the whole batch (100 rows of a run's shape: 0.53 against 0.95 ms on Postgres 15).
 */
export function recordset(rows: readonly object[], columns: string): SQL {
  return sql`json_to_recordset(${jsonText(rows)}::json) as v(${sql.raw(columns)})`;
}

/**
 * Rows per statement of an update joined to a batch's recordset (closes, starts, counts): a long
 * batch becomes a few statements, each holding its rows' locks briefly.
 */
export const JOINED_ROWS = 500;

/** `items` in slices of at most `size`, in order. */
export function* chunks<T>(items: readonly T[], size: number): Generator<readonly T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}
