import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { rows } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { insertRunRows, type RunRow } from "../helpers/ledger.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";
import { cli } from "../helpers/cli.ts";

const t = daemonPerTest();

const DAY = 86_400_000;

const withRetention = (lines: string) => t.start({ toml: `[retention]\n${lines}\n` });

const quietJob = (daemon: Daemon, name: string) =>
  daemon.services.cron.add({ name, agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });

/** The real CLI, in-process, over the daemon's socket. */

interface ArchivedRun {
  id: string;
  cronJobId: string;
  jobName: string;
  scheduledFor: string;
  status: string;
  attemptHistory: { number: number; status: string; httpStatus: number | null; excerpt: string | null }[];
}

function readArchive(dir: string): ArchivedRun[] {
  const files = readdirSync(dir);
  expect(files.every((f) => /^runs-\d{8}T\d{6}Z-\d+-\d+\.jsonl\.gz$/.test(f))).toBe(true);
  return files.flatMap((f) =>
    gunzipSync(readFileSync(join(dir, f)))
      .toString("utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as ArchivedRun),
  );
}

const liveSlots = async (daemon: Daemon, jobId: string) =>
  (
    await rows<{ at: Date | string }>(
      daemon.services.database.db,
      sql`select scheduled_for as at from cron_job_runs where cron_job_id = ${jobId}::bigint`,
    )
  ).map((r) => new Date(r.at).toISOString());

const rolledUp = async (daemon: Daemon, jobId: string) =>
  Number(
    (
      await rows<{ n: string | number | null }>(
        daemon.services.database.db,
        sql`select sum(count) as n from cron_run_rollups where job_id = ${jobId}::bigint`,
      )
    )[0]?.n ?? 0,
  );

describe(`retention: nothing important is lost (${backendName})`, () => {
  it("archives pruned runs as gzip-compressed JSON lines before deleting them", async () => {
    const archive = tempDir("archive");
    const daemon = await withRetention(
      `prune_interval = "1h"\nruns = "1d"\nruns_keep_last = 0\nfailed_runs = "1d"\narchive_dir = "${archive}"`,
    );
    const job = await quietJob(daemon, "archived");
    const seeded: RunRow[] = Array.from({ length: 1_200 }, (_, i) => ({
      jobId: job.id,
      scheduledFor: new Date(Date.now() - 3 * DAY - i * 60_000),
      status: i % 7 === 0 ? "Failed" : "Succeeded",
    }));
    await insertRunRows(daemon.services.database.db, seeded);
    // One of them was retried: its failed first attempt is kept with it in the archive.
    const retried = seeded[1]!.scheduledFor;
    await daemon.services.database.db.execute(
      sql`update cron_job_runs set attempts = 2, failed_attempts = 1, http_status = 200, attempt_ms = 80,
            attempt_log = ${JSON.stringify([{ n: 1, at: retried.toISOString(), ms: 120, status: "Failed", http: 503, excerpt: "busy" }])}::jsonb
          where scheduled_for = ${retried.toISOString()}::timestamptz`,
    );
    const result = await daemon.services.pruner.runPass();
    expect(result.archived).toHaveLength(2);
    const archived = readArchive(archive);
    expect(archived.find((r) => r.scheduledFor === retried.toISOString())?.attemptHistory).toMatchObject([
      { number: 1, status: "Failed", httpStatus: 503, excerpt: "busy" },
      { number: 2, status: "Succeeded", httpStatus: 200 },
    ]);
    expect(archived.map((r) => r.scheduledFor).sort()).toEqual(seeded.map((r) => r.scheduledFor.toISOString()).sort());
    expect(archived[0]).toMatchObject({ cronJobId: job.id, jobName: "archived" });
    expect(await liveSlots(daemon, job.id)).toEqual([]);
  });

  it("runs ls --summary counts live runs plus the rollups of pruned ones; runs export prints history", async () => {
    const daemon = await withRetention(`prune_interval = "1h"\nruns = "10d"\nruns_keep_last = 2\nfailed_runs = "10d"`);
    const job = await quietJob(daemon, "summed");
    const day = (d: number, status: RunRow["status"]) => ({
      jobId: job.id,
      scheduledFor: new Date(Date.UTC(2020, 0, d, 12)),
      status,
    });
    await insertRunRows(daemon.services.database.db, [
      day(1, "Succeeded"),
      day(2, "Failed"),
      day(3, "Succeeded"),
      day(4, "Succeeded"),
      day(5, "Failed"),
    ]);
    // Each success reported usage: the rollups of the pruned ones keep its sums.
    await daemon.services.database.db.execute(
      sql`update cron_job_runs set input_tokens = 100, output_tokens = 10, cost_usd = 0.5 where status = 'Succeeded'`,
    );
    const exported = await cli(daemon, "runs", "export", "--before", "2020-01-04T00:00:00Z");
    expect(exported.code).toBe(0);
    expect(
      exported.stdout
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as ArchivedRun).scheduledFor),
    ).toEqual(["2020-01-03T12:00:00.000Z", "2020-01-02T12:00:00.000Z", "2020-01-01T12:00:00.000Z"]);
    expect((await daemon.services.pruner.runPass()).pruned).toMatchObject({ runs: 2, failed_runs: 1 });
    const summary = await cli(daemon, "runs", "ls", "--summary", "--json");
    expect(JSON.parse(summary.stdout)).toEqual([
      {
        jobId: job.id,
        jobName: "summed",
        agentId: "a1",
        status: "Failed",
        count: 2,
        rolledUp: 1,
        inputTokens: 0,
        outputTokens: 0,
        costUsd: 0,
      },
      {
        jobId: job.id,
        jobName: "summed",
        agentId: "a1",
        status: "Succeeded",
        count: 3,
        rolledUp: 2,
        inputTokens: 300,
        outputTokens: 30,
        costUsd: 1.5,
      },
    ]);
    const ranged = await cli(
      daemon,
      "runs",
      "ls",
      "--summary",
      "--from",
      "2020-01-02T00:00:00Z",
      "--to",
      "2020-01-05T00:00:00Z",
    );
    expect(ranged.stdout).toMatch(
      /summed\s+a1\s+Failed\s+1\s+1\s+0\s+0\s+\$0\.00\n.*summed\s+a1\s+Succeeded\s+2\s+1\s+200\s+20\s+\$1\.00/s,
    );
  });

  it("reports in doctor a kind whose removable rows are older than twice its retention, and counts what it prunes", async () => {
    const daemon = await withRetention(`prune_interval = "1h"\nruns = "1d"\nruns_keep_last = 0`);
    const job = await quietJob(daemon, "lagging");
    await insertRunRows(daemon.services.database.db, [
      { jobId: job.id, scheduledFor: new Date(Date.now() - 3 * DAY), status: "Succeeded" },
    ]);
    const doctor = async () => (await daemon.services.api.inject({ method: "GET", url: "/v1/doctor" })).json();
    expect((await doctor()).retentionLag).toMatchObject([{ kind: "runs", retention: DAY }]);
    const before = (await daemon.services.api.inject({ method: "GET", url: "/metrics" })).body;
    expect(before).toMatch(/missiond_oldest_row_seconds\{kind="runs"\} (2\d{5})/);
    await daemon.services.pruner.runPass();
    expect((await doctor()).retentionLag).toEqual([]);
    const after = (await daemon.services.api.inject({ method: "GET", url: "/metrics" })).body;
    expect(after).toContain('missiond_pruned_rows_total{kind="runs"} 1');
    expect(after).not.toContain('missiond_oldest_row_seconds{kind="runs"}');
  });

  it("prunes under a per-second job without losing or duplicating a slot", async () => {
    const archive = tempDir("archive");
    const daemon = await withRetention(
      `prune_interval = "200ms"\nruns = "2s"\nruns_keep_last = 0\nfailed_runs = "2s"\narchive_dir = "${archive}"`,
    );
    const job = await daemon.services.cron.add({ name: "tick", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    await waitFor(async () => (await rolledUp(daemon, job.id)) >= 5, "five pruned runs", 30_000, 200);
    await daemon.services.cron.pause(job.id);
    await waitFor(
      async () =>
        (
          await rows(
            daemon.services.database.db,
            sql`select 1 from cron_job_runs where cron_job_id = ${job.id}::bigint and status in ('Claimed', 'Running')`,
          )
        ).length === 0,
      "the last runs to finish",
    );
    await daemon.services.pruner.runPass();
    const archived = readArchive(archive).map((r) => r.scheduledFor);
    const live = await liveSlots(daemon, job.id);
    const all = [...archived, ...live].sort();
    expect(new Set(all).size).toBe(all.length);
    expect(await rolledUp(daemon, job.id)).toBe(archived.length);
    // Every second from the first slot to the last is there exactly once (Missed included).
    const first = Date.parse(all[0]!);
    expect(all).toEqual(all.map((_, i) => new Date(first + i * 1000).toISOString()));
  });
});
