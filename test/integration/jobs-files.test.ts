import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, ApiError } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { cronJobRevisions, cronJobs } from "../../src/db/schema/index.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { tempDir } from "../helpers/tmp.ts";
import { cli } from "../helpers/cli.ts";

const dir = tempDir("jobs");
function jobsFile(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const job = (name: string, fields: string) => `[jobs.${name}]\nagent = "ops"\nprompt = "p-${name}"\n${fields}\n`;

describe(`jobs files: missiond apply (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  beforeAll(async () => {
    db = await freshDatabase();
    daemon = await startTestDaemon(db);
  });
  afterAll(async () => {
    await daemon.stop();
    await db.drop();
  });

  const rowOf = async (name: string) => {
    const found = await daemon.services.database.db.select().from(cronJobs).where(eq(cronJobs.name, name));
    return found.find((row) => row.deletedAt === null) ?? null;
  };
  const revisionsOf = async (id: bigint) =>
    daemon.services.database.db
      .select()
      .from(cronJobRevisions)
      .where(eq(cronJobRevisions.cronJobId, id))
      .orderBy(asc(cronJobRevisions.revision));

  it("creates the file's jobs, marked managed by the file, each with a revision by the file", async () => {
    const path = jobsFile(
      "create.toml",
      job("c-nightly", 'cron = "0 3 * * *"\ntz = "Europe/Berlin"') +
        job("c-pulse", 'every = "30m"\nkind = "heartbeat"'),
    );
    const out = await cli(daemon, "apply", path);
    expect(out).toMatchObject({ code: 0, stderr: "" });
    expect(out.stdout).toBe(
      `+ create     c-nightly  (${path})\n+ create     c-pulse  (${path})\nApplied: 2 created, 0 updated, 0 deleted, 0 unchanged.\n`,
    );
    const nightly = (await rowOf("c-nightly"))!;
    expect(nightly).toMatchObject({ cronExpr: "0 3 * * *", timezone: "Europe/Berlin", managedBy: path });
    expect(nightly.nextFireAt).not.toBeNull();
    expect((await revisionsOf(nightly.id)).map((r) => [r.action, r.actor])).toEqual([["create", `file:${path}`]]);

    const again = await cli(daemon, "apply", path);
    expect(again.stdout).toBe(
      "  unchanged  c-nightly\n  unchanged  c-pulse\nNo changes: 2 jobs already match the files.\n",
    );
    expect(await revisionsOf(nightly.id)).toHaveLength(1);
  });

  it("updates changed fields, showing each before → after, and a dry run writes nothing", async () => {
    const path = jobsFile("update.toml", job("u-job", 'every = "30m"'));
    await cli(daemon, "apply", path);
    const before = (await rowOf("u-job"))!;
    jobsFile("update.toml", job("u-job", 'every = "15m"\njitter = "10s"').replace('"p-u-job"', '"new prompt"'));
    const dry = await cli(daemon, "apply", path, "--dry-run");
    expect(dry.stdout).toBe(
      `~ update     u-job  (${path})\n    prompt: "p-u-job" → "new prompt"\n    every: "30m" → "15m"\n    jitter: (none) → "10s"\nPlan (dry run, nothing applied): 0 to create, 1 to update, 0 to delete, 0 unchanged.\n`,
    );
    expect(await rowOf("u-job")).toEqual(before);

    expect((await cli(daemon, "apply", path)).stdout).toContain("Applied: 0 created, 1 updated");
    const after = (await rowOf("u-job"))!;
    expect(after).toMatchObject({ prompt: "new prompt", everyMs: 900_000, jitterMs: 10_000 });
    expect(after.nextFireAt!.getTime()).toBeLessThanOrEqual(Date.now() + 900_000);
    expect((await revisionsOf(after.id)).map((r) => r.action)).toEqual(["create", "apply"]);
  });

  it("leaves a job the file no longer declares alone, and deletes it with --prune", async () => {
    const path = jobsFile("prune.toml", job("p-keep", 'every = "1h"') + job("p-drop", 'every = "1h"'));
    await cli(daemon, "apply", path);
    const dropped = (await rowOf("p-drop"))!;
    jobsFile("prune.toml", job("p-keep", 'every = "1h"'));
    expect((await cli(daemon, "apply", path)).stdout).toContain(
      `! orphaned   p-drop  (no longer in ${path}; left alone, --prune deletes it)`,
    );
    expect(await rowOf("p-drop")).not.toBeNull();
    const pruned = await cli(daemon, "apply", path, "--prune");
    expect(pruned.stdout).toBe(
      `  unchanged  p-keep\n- delete     p-drop  (no longer in ${path})\nApplied: 0 created, 0 updated, 1 deleted, 1 unchanged.\n`,
    );
    expect(await rowOf("p-drop")).toBeNull();
    expect((await revisionsOf(dropped.id)).map((r) => [r.action, r.actor])).toEqual([
      ["create", `file:${path}`],
      ["delete", `file:${path}`],
    ]);
  });

  it("reports a job changed outside its file as drift, and sets it back", async () => {
    const path = jobsFile("drift.toml", job("d-job", 'cron = "0 * * * *"'));
    await cli(daemon, "apply", path);
    const row = (await rowOf("d-job"))!;
    expect(await cli(daemon, "cron", "edit", String(row.id), "--prompt", "edited by hand")).toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`cron job ${row.id} is managed by ${path}`),
    });
    expect((await cli(daemon, "cron", "edit", String(row.id), "--prompt", "edited by hand", "--force")).code).toBe(0);
    const out = await cli(daemon, "apply", path);
    expect(out.stdout).toBe(
      `~ update     d-job  (${path})\n    drift: changed outside the file (prompt)\n    prompt: "edited by hand" → "p-d-job"\nApplied: 0 created, 1 updated, 0 deleted, 0 unchanged.\n`,
    );
    expect((await rowOf("d-job"))!.prompt).toBe("p-d-job");
    expect((await cli(daemon, "apply", path)).stdout).toContain("No changes");
  });

  it("refuses cron rm of a job its file manages unless --force, as cron edit, and keeps it meanwhile", async () => {
    const path = jobsFile("rm.toml", job("r-job", 'every = "1h"'));
    await cli(daemon, "apply", path);
    const row = (await rowOf("r-job"))!;
    expect(await cli(daemon, "cron", "rm", String(row.id))).toEqual({
      code: 1,
      stdout: "",
      stderr: `missiond: cron job ${row.id} is managed by ${path}: remove it there and apply, or remove with force (CONFLICT)\n`,
    });
    const api = apiClient({ socketPath: daemon.config.socketPath });
    const refused = await api.delete(`/v1/cron-jobs/${row.id}?force=false`).catch((err: unknown) => err);
    expect(refused).toMatchObject({ status: 409, code: "CONFLICT" });
    expect(await rowOf("r-job")).toEqual(row);
    expect(await revisionsOf(row.id)).toHaveLength(1);

    expect(await cli(daemon, "cron", "rm", String(row.id), "--force")).toMatchObject({
      code: 0,
      stdout: `removed cron job ${row.id}\n`,
    });
    expect(await rowOf("r-job")).toBeNull();
    expect((await revisionsOf(row.id)).map((r) => r.action)).toEqual(["create", "delete"]);
    // A job made by hand needs no --force.
    const added = await cli(
      daemon,
      "cron",
      "add",
      "--name",
      "r-hand",
      "--agent",
      "ops",
      "--every",
      "1h",
      "--prompt",
      "p",
    );
    const hand = /cron job (\d+)/.exec(added.stdout)![1]!;
    expect((await cli(daemon, "cron", "rm", hand)).code).toBe(0);
  });

  it("adopts a job made with cron add that a file declares, and says so", async () => {
    expect(
      (await cli(daemon, "cron", "add", "--name", "a-job", "--agent", "ops", "--every", "1h", "--prompt", "old")).code,
    ).toBe(0);
    const path = jobsFile("adopt.toml", job("a-job", 'every = "1h"'));
    const out = await cli(daemon, "apply", path);
    const id = (await rowOf("a-job"))!.id;
    expect(out.stdout).toBe(
      `~ update     a-job  (${path})\n    adopt: existing job ${id} becomes managed by ${path}\n    prompt: "old" → "p-a-job"\nApplied: 0 created, 1 updated, 0 deleted, 0 unchanged.\n`,
    );
    expect((await rowOf("a-job"))!.managedBy).toBe(path);
  });

  it("refuses a job another file manages unless forced", async () => {
    const first = jobsFile("owner-a.toml", job("o-job", 'every = "1h"'));
    await cli(daemon, "apply", first);
    const second = jobsFile("owner-b.toml", job("o-job", 'every = "1h"'));
    expect(await cli(daemon, "apply", second)).toMatchObject({
      code: 1,
      stderr: `missiond: job "o-job" in ${second} is managed by ${first} (an apply with --force moves it) (CONFLICT)\n`,
    });
    expect((await rowOf("o-job"))!.managedBy).toBe(first);
    expect((await cli(daemon, "apply", second, "--force")).stdout).toContain(`moves from ${first}`);
    expect((await rowOf("o-job"))!.managedBy).toBe(second);
  });

  it("applies nothing when any job of any file is invalid, naming the file, line, job and key", async () => {
    const good = jobsFile("bad-good.toml", job("b-good", 'every = "1h"'));
    await cli(daemon, "apply", good);
    jobsFile("bad-good.toml", job("b-good", 'every = "2h"') + job("b-new", 'every = "1h"'));
    const bad = jobsFile("bad.toml", job("b-typo", 'every = "1h"\npromt = "x"') + job("b-cron", 'cron = "0 25 * * *"'));
    const out = await cli(daemon, "apply", good, bad);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(`${bad}:5: job "b-typo": unknown key "promt" (did you mean "prompt"?)`);
    expect(out.stderr).toMatch(new RegExp(`${bad}:9: job "b-cron": cron: invalid cron expression "0 25`));
    expect(await rowOf("b-new")).toBeNull();
    expect((await rowOf("b-good"))!.everyMs).toBe(3_600_000);

    const twice = jobsFile("twice.toml", job("t-job", 'every = "1h"') + job("t-job", 'every = "2h"'));
    expect(await cli(daemon, "apply", good, twice)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`${twice}:5:2: not valid TOML: trying to redefine an already defined table`),
    });
    const across = jobsFile("across.toml", job("b-good", 'every = "1h"'));
    expect((await cli(daemon, "apply", good, across)).stderr).toContain(
      `${across}:1: job "b-good" is also defined in ${good}:1`,
    );
    expect(await rowOf("b-new")).toBeNull();
  });

  it("checks jobs sent to the API as the CLI does, naming the file, job and key", async () => {
    const api = apiClient({ socketPath: daemon.config.socketPath });
    const refused = await api
      .post("/v1/apply", {
        files: [
          { path: "/srv/jobs.toml", jobs: [{ name: "x", agent: "a", prompt: "p", every: "1h", tz: "Nowhere/Land" }] },
        ],
      })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).message).toBe(
      'invalid jobs file:\n  /srv/jobs.toml: job "x": tz: unknown time zone "Nowhere/Land" (use an IANA name such as Europe/Berlin)',
    );
    expect(await rowOf("x")).toBeNull();
  });

  it("exports jobs as a jobs file that applies back as no changes", async () => {
    const path = jobsFile(
      "round.toml",
      job(
        "r-one",
        'cron = "*/5 * * * *"\ntz = "Asia/Tokyo"\noverlap = "allow"\nmax_runs = 5\nstarts_at = 2031-01-01T00:00:00+02:00',
      ) +
        job(
          "r-two",
          'every = "45m"\nkind = "heartbeat"\nactive_hours = "22:00-06:00"\nskip_if_busy = true\nsession = "s-9"\njitter = "1m30s"',
        ),
    );
    await cli(daemon, "apply", path);
    const exported = await cli(daemon, "cron", "export", "--name", "r-one", "--name", "r-two");
    expect(exported.stdout).toBe(
      '[jobs.r-one]\nagent = "ops"\nprompt = "p-r-one"\ncron = "*/5 * * * *"\ntz = "Asia/Tokyo"\noverlap = "allow"\nstarts_at = 2030-12-31T22:00:00.000Z\nmax_runs = 5\n\n' +
        '[jobs.r-two]\nagent = "ops"\nprompt = "p-r-two"\nevery = "45m"\nkind = "heartbeat"\nsession = "s-9"\nactive_hours = "22:00-06:00"\nskip_if_busy = true\njitter = "1m30s"\n',
    );
    jobsFile("round.toml", exported.stdout);
    expect((await cli(daemon, "apply", path)).stdout).toBe(
      "  unchanged  r-one\n  unchanged  r-two\nNo changes: 2 jobs already match the files.\n",
    );
    expect(await cli(daemon, "cron", "export", "--name", "nope")).toMatchObject({
      code: 4,
      stderr: 'missiond: no cron job named "nope" (NOT_FOUND)\n',
    });
  });
});

describe(`jobs files: jobs_files in the config (${backendName})`, () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it("applies them at start (pruning what they dropped), and keeps the jobs when a file is invalid, reported by doctor", async () => {
    const path = jobsFile("configured.toml", job("s-one", 'every = "1h"') + job("s-two", 'cron = "0 9 * * 1-5"'));
    const toml = `jobs_files = ["${path}"]\n`;
    let daemon = await startTestDaemon(db, { toml });
    const names = async () => (await daemon.services.cron.list()).map((j) => j.name).sort();
    try {
      expect(await names()).toEqual(["s-one", "s-two"]);
      expect((await cli(daemon, "doctor", "--json")).stdout).toContain('"error": null');
    } finally {
      await daemon.stop();
    }

    jobsFile("configured.toml", job("s-one", 'every = "2h"'));
    daemon = await startTestDaemon(db, { toml });
    try {
      expect(await names()).toEqual(["s-one"]);
      expect((await daemon.services.cron.list())[0]!.every).toBe("2h");
    } finally {
      await daemon.stop();
    }

    jobsFile("configured.toml", job("s-one", 'every = "3h"\nagnet = "x"'));
    daemon = await startTestDaemon(db, { toml });
    try {
      expect((await daemon.services.cron.list()).map((j) => [j.name, j.every])).toEqual([["s-one", "2h"]]);
      const doctor = await cli(daemon, "doctor");
      expect(doctor.code).toBe(1);
      expect(doctor.stdout).toContain(
        `jobs files: not applied at ${daemon.services.jobsFiles.state().at}, jobs left as they were:\n  invalid jobs file:\n  ${path}:5: job "s-one": unknown key "agnet" (did you mean "agent"?)`,
      );
    } finally {
      await daemon.stop();
    }

    // A file no longer listed: its jobs are left as they are.
    daemon = await startTestDaemon(db);
    try {
      expect((await daemon.services.cron.list()).map((j) => [j.name, j.managedBy])).toEqual([["s-one", path]]);
    } finally {
      await daemon.stop();
    }
  });
});
