import { basename } from "node:path";
import { describe, expect, it } from "vitest";
import { bossSchemaSites, readSource, sourceFiles, sqlSites, type SqlSite } from "../helpers/sql-placement.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** A domain's query module: `queries.ts` or `<what>-queries.ts` in its folder. */
const isQueryModule = (file: string) => /^(.+-)?queries\.ts$/.test(basename(file));

// The database's own infrastructure, which speaks SQL by nature: the connection, migrations and
// partitions, the batch parameters and closes every query module shares, prepared statements,
// pg-boss's adapter, and the schema.
const INFRASTRUCTURE = new Set([
  "src/db/client.ts",
  "src/db/migrate.ts",
  "src/db/partitions.ts",
  "src/db/partition-convert.ts",
  "src/db/batch-params.ts",
  "src/db/insert-records.ts",
  "src/db/close-deliveries.ts",
  "src/db/prepared.ts",
  "src/db/boss-tables.ts",
  "src/db/disk-space.ts",
]);
const isInfrastructure = (file: string) => INFRASTRUCTURE.has(file) || file.startsWith("src/db/schema/");

let scanned: Map<string, SqlSite[]> | undefined;

function sitesOutsideQueryModules(): Map<string, SqlSite[]> {
  if (scanned) return scanned;
  const found = new Map<string, SqlSite[]>();
  for (const file of sourceFiles(ROOT, "src")) {
    if (isQueryModule(file) || isInfrastructure(file)) continue;
    const sites = sqlSites(file, readSource(ROOT, file));
    if (sites.length > 0) found.set(file, sites);
  }
  scanned = found;
  return found;
}

const describeSites = (sites: SqlSite[]) =>
  [...new Set(sites.map((s) => `${s.where} (line ${s.line}: ${s.what})`))].join("; ");

describe("where SQL is built", () => {
  it("builds SQL only in query modules and the database's infrastructure", () => {
    const outside = [...sitesOutsideQueryModules()].map(([file, sites]) => `${file}: ${describeSites(sites)}`);
    expect(outside, "statements outside a query module (queries.ts or *-queries.ts)").toEqual([]);
  });

  it("touches pg-boss's own tables only through its adapter", () => {
    const outside = sourceFiles(ROOT, "src")
      .filter((file) => file !== "src/db/boss-tables.ts")
      .flatMap((file) =>
        bossSchemaSites(file, readSource(ROOT, file)).map((s) => `${file}: ${s.where} (line ${s.line})`),
      );
    expect(outside).toEqual([]);
  });
});

describe("the SQL scan", () => {
  it("finds drizzle's tag, a statement on a database or transaction, and the imports that build them", () => {
    const text = [
      'import { eq, sql } from "drizzle-orm";',
      'import { cronJobs, RUN_STATUSES } from "../db/schema/index.ts";',
      "export async function lock(tx: Tx) { await tx.execute(sql`select 1`); }",
      "export class Store { async names() { return this.deps.db.select().from(cronJobs); } }",
    ].join("\n");
    expect(sqlSites("x.ts", text).map((s) => `${s.where}: ${s.what}`)).toEqual([
      "(imports): imports drizzle-orm",
      "(imports): imports table cronJobs",
      "lock: tx.execute(…)",
      "lock: sql`…`",
      "Store.names: this.deps.db.select(…)",
    ]);
  });

  it("finds SQL text handed to the embedded database's client", () => {
    const text = 'export async function flush(database: Database) { await database.pglite!.exec("select 1"); }';
    expect(sqlSites("x.ts", text).map((s) => `${s.where}: ${s.what}`)).toEqual(["flush: database.pglite!.exec(…)"]);
  });

  it("ignores types, comments, and a select or delete on anything but a database", () => {
    const text = [
      'import type { SQL } from "drizzle-orm";',
      'import { RUN_STATUSES, type CronJobRow } from "../db/schema/index.ts";',
      "// db.select() and sql`…` in a comment",
      "export function tidy(waiting: Map<string, number>, client: Client) {",
      '  waiting.delete("a");',
      '  return client.delete("/v1/agents/a");',
      "}",
    ].join("\n");
    expect(sqlSites("x.ts", text)).toEqual([]);
  });

  it("finds pg-boss's schema named in a string or a template, not in a comment", () => {
    const text = [
      "// pgboss.job in a comment",
      'const a = "select * from pgboss.queue";',
      "const b = sql`update pgboss.job set state = ${s}`;",
    ].join("\n");
    expect(bossSchemaSites("x.ts", text).map((s) => s.line)).toEqual([2, 3]);
  });
});
