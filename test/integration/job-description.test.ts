import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JobView } from "../../src/cron/views.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { cli } from "../helpers/cli.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";

/**
 * A job's description, the field added through the job table alone: the CLI's add and edit flags,
 * cron ls and show, the API, the revision history, export and jobs files all carry it.
 */
describe(`a job's description on every surface (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  const run = async (...args: string[]) => {
    const result = await cli(daemon, ...args);
    expect(result.stderr, args.join(" ")).toBe("");
    expect(result.code, args.join(" ")).toBe(0);
    return result.stdout;
  };
  const show = async (id: string) => JSON.parse(await run("--json", "cron", "show", id)) as JobView;

  beforeAll(async () => {
    db = await freshDatabase();
    daemon = await startTestDaemon(db);
  });
  afterAll(async () => {
    await daemon.stop();
    await db.drop();
  });

  it("is set by cron add, shown by ls and show, changed and cleared by edit, each change in the history", async () => {
    const added = JSON.parse(
      await run(
        "--json",
        "cron",
        "add",
        "--name",
        "backups",
        "--agent",
        "a1",
        "--every",
        "1h",
        "--prompt",
        "check the backups",
        "--description",
        "nightly backup check",
        "--catchup-max",
        "3",
      ),
    ) as JobView;
    expect(added).toMatchObject({ description: "nightly backup check", catchupMax: 3 });
    expect(await show(added.id)).toMatchObject({ description: "nightly backup check" });

    const ls = await run("cron", "ls");
    expect(ls.split("\n")[0]).toMatch(/DESCRIPTION$/);
    expect(ls).toContain("nightly backup check");

    await run("cron", "edit", added.id, "--description", "backups and replicas");
    expect((await show(added.id)).description).toBe("backups and replicas");
    await run("cron", "edit", added.id, "--description", "none");
    expect((await show(added.id)).description).toBeNull();

    const history = await run("cron", "history", added.id);
    expect(history).toContain("description: nightly backup check → backups and replicas");
    expect(history).toContain("description: backups and replicas → -");
  });

  it("refuses a description over 2,000 characters, naming the field, and keeps the job as it was", async () => {
    const id = (
      JSON.parse(
        await run("--json", "cron", "add", "--name", "long", "--agent", "a1", "--every", "1h", "--prompt", "p"),
      ) as JobView
    ).id;
    const refused = await cli(daemon, "cron", "edit", id, "--description", "x".repeat(2001));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/description/);
    expect((await show(id)).description).toBeNull();
  });

  it("round-trips through jobs files: apply sets it, export writes it, a changed one is an update of that field", async () => {
    const file = join(daemon.config.stateDir, "jobs.toml");
    const write = (description: string) =>
      writeFileSync(
        file,
        `[jobs.report]\nagent = "a1"\nprompt = "write the report"\ncron = "0 6 * * *"\ndescription = "${description}"\n`,
      );
    write("the morning report");
    expect(await run("apply", file)).toMatch(/\+ create\s+report/);
    const exported = await run("cron", "export", "--name", "report");
    expect(exported).toContain('description = "the morning report"');

    writeFileSync(file, exported);
    expect(await run("apply", "--dry-run", file)).toMatch(/^ {2}unchanged {2}report\nNo changes/);

    write("the morning report, with charts");
    const plan = await run("apply", file);
    expect(plan).toMatch(/~ update\s+report/);
    expect(plan).toContain('description: "the morning report" → "the morning report, with charts"');
  });
});
