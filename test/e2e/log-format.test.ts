import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SERVER_URL, backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { runMissiond, seedEmbeddedDatabase } from "../helpers/process.ts";

describe(`the log format of serve and migrate (${backendName})`, () => {
  const databases: TestDatabase[] = [];
  afterAll(async () => {
    for (const db of databases) await db.drop();
  });

  async function migrate(...flags: string[]) {
    const env: Record<string, string> = { DATABASE_URL: "", MISSIOND_LOG_LEVEL: "info" };
    if (SERVER_URL) {
      const db = await freshDatabase();
      databases.push(db);
      env.DATABASE_URL = db.url!;
    }
    const cwd = mkdtempSync(join(tmpdir(), "missiond-log-"));
    // The format is what is tested, not a first migration: on the run's migrated template, not an initdb.
    seedEmbeddedDatabase(cwd, env);
    return runMissiond(["migrate", ...flags], { cwd, env });
  }

  it("is JSON when stdout is not a terminal", async () => {
    const out = await migrate();
    expect(out.code).toBe(0);
    // The log's lines are JSON objects (on Postgres the partitioning's come first); the command's
    // own answer is the plain line beside them.
    const lines = out.stdout.split("\n").filter((l) => l.startsWith("{"));
    const entries = lines.map((l) => JSON.parse(l) as { msg: string });
    expect(entries).toContainEqual(
      expect.objectContaining({ level: 30, msg: "migrations applied", service: "missiond" }),
    );
  });

  it("is one readable line per entry with --log-format pretty", async () => {
    const out = await migrate("--log-format", "pretty");
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: migrations applied \{"database":"\w+"\}$/m);
    expect(out.stdout).not.toMatch(/^\{/m);
  });

  it("refuses a format it does not know, naming the choices", async () => {
    const out = await runMissiond(["serve", "--log-format", "xml"], { cwd: tmpdir(), env: {} });
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/^missiond: --log-format: Allowed choices are json, pretty\.\n/);
  });
});
