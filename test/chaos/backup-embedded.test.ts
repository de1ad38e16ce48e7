/**
 * `missiond backup <file>` on the embedded database: refused while the daemon runs (it holds the
 * data directory), written once it is stopped, and a daemon started on the backup, unpacked into a
 * new state directory, carries on: its jobs are there, no slot the backup holds is delivered again,
 * and the slots of the time it was down are Missed or run per catch-up policy.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SERVER_URL } from "../helpers/db.ts";
import { countBy, countingReceiver, coverage, sleep } from "../helpers/chaos.ts";
import { killServes, perSecondJobs, startServe, waitReady, type Serve } from "../helpers/drill-daemons.ts";
import { runMissiond } from "../helpers/process.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

// Slots claimed more than this late count as backfilled (src/cron/catchup.ts MISFIRE_GRACE_MS).
const GRACE_MS = 2_000;

// The daemons use their own embedded database whatever the suite's backend: it runs once, in the PGlite pass.
const skipReason = SERVER_URL ? "runs in the PGlite pass of the suite (DATABASE_URL unset)" : null;

interface ApiRun {
  cronJobId: string;
  scheduledFor: string;
  status: string;
  reason: string | null;
  claimedAt: string;
}

describe.skipIf(skipReason !== null)(`missiond backup${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  let receiver: Awaited<ReturnType<typeof countingReceiver>> | null = null;
  const serves: Serve[] = [];

  afterAll(async () => {
    if (process.env.CHAOS_DEBUG)
      for (const s of serves)
        writeFileSync(join(process.env.CHAOS_DEBUG, `backup-embedded-${s.name}.log`), s.serve.output());
    await killServes(serves);
    await receiver?.close();
  });

  it("is refused while the daemon runs, written once it stops, and a daemon started on it delivers no slot of it again", async () => {
    receiver = await countingReceiver();
    const source = startServe("source", null, receiver.url);
    serves.push(source);
    await waitReady(source);
    const jobs = await perSecondJobs(source.api);
    const names = new Map([...jobs].map(([name, id]) => [id, name]));
    const from = Math.ceil(Date.now() / 1000) * 1000 + 1_000;
    await sleep(3_000);

    const env = { MISSIOND_STATE_DIR: source.dir, MISSIOND_CONFIG: join(source.dir, "config.toml") };
    const file = join(tempDir("backup-file"), "missiond.tar.gz");
    const whileRunning = await runMissiond(["backup", file], { cwd: source.dir, env });
    expect(whileRunning.code).not.toBe(0);
    expect(whileRunning.stderr).toContain(`in use by missiond pid ${source.serve.pid}`);
    expect(existsSync(file)).toBe(false);

    source.serve.kill("SIGTERM");
    await source.serve.exited;
    const stoppedAt = Date.now();
    const deliveredBefore = new Map(receiver.cron);
    const written = await runMissiond(["backup", file], { cwd: source.dir, env });
    expect(written, written.stderr).toMatchObject({ code: 0 });
    expect(written.stdout).toContain(`written to ${file}`);
    const again = await runMissiond(["backup", file], { cwd: source.dir, env });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("already exists");
    await sleep(2_000);

    // The restore: the tarball unpacked as the data directory of a new state directory.
    const dir = tempDir("restored");
    mkdirSync(join(dir, "pgdata"), { mode: 0o700 });
    const unpacked = spawnSync("tar", ["-xzf", file, "-C", join(dir, "pgdata")], { encoding: "utf8" });
    expect(unpacked.status, unpacked.stderr).toBe(0);
    const restored = startServe("restored", null, receiver.url, { dir });
    serves.push(restored);
    await waitReady(restored);
    const startedAt = Date.now();
    const listed = await restored.api.get<{ jobs: { id: string }[] }>("/v1/cron-jobs");
    expect(listed.jobs.map((j) => j.id).sort()).toEqual([...jobs.values()].sort());
    await sleep(3_000);
    const to = Math.floor(Date.now() / 1000) * 1000 - 1_000;
    for (const id of jobs.values()) await restored.api.post(`/v1/cron-jobs/${id}/pause`, {});
    const runs = await waitFor(
      async () => {
        const all = (
          await Promise.all(
            [...jobs.values()].map((id) => restored.api.get<{ runs: ApiRun[] }>(`/v1/cron-jobs/${id}/runs?limit=200`)),
          )
        ).flatMap((a) => a.runs);
        return all.some((r) => r.status === "Claimed" || r.status === "Running") ? null : all;
      },
      "every run to be closed",
      30_000,
      250,
    );
    const rows = runs.map((r) => ({
      job: names.get(r.cronJobId)!,
      slot: Date.parse(r.scheduledFor),
      status: r.status,
      reason: r.reason,
      latenessMs: Date.parse(r.claimedAt) - Date.parse(r.scheduledFor),
      key: `${r.cronJobId}@${r.scheduledFor}`,
    }));

    // Nothing the source delivered is delivered again; nothing at all twice.
    expect([...receiver.cron].filter(([, n]) => n > 1)).toEqual([]);
    expect([...deliveredBefore.keys()].filter((key) => receiver!.cron.get(key) !== 1)).toEqual([]);
    const cover = coverage(rows, [...jobs.keys()], from, to);
    expect(cover.gaps, `slots without a row (of ${cover.expected})`).toEqual([]);
    expect(cover.duplicates).toEqual([]);
    // The time it was down: per catch-up policy.
    const down: Record<string, Record<string, number>> = {};
    for (const name of jobs.keys()) {
      const gap = rows.filter((r) => r.job === name && r.slot > stoppedAt && r.slot < startedAt - GRACE_MS);
      expect(gap.length, name).toBeGreaterThan(0);
      for (const r of gap.filter((r) => r.status === "Missed"))
        expect(r.reason, name).toContain(`(catch-up policy ${name === "all-3" ? "all" : name})`);
      // skip: nothing late runs (a slot the source claimed before it stopped is on time).
      if (name === "skip")
        expect(
          gap.filter((r) => r.status !== "Missed" && r.latenessMs > GRACE_MS),
          name,
        ).toEqual([]);
      down[name] = countBy(gap, (r) => r.status);
    }
    console.log(
      `[backup-embedded] refused while running; ${statSync(file).size} bytes written after the stop; restored by tar into a new state directory; ` +
        `${deliveredBefore.size} slots delivered before, none again; ${cover.expected} slots in the window, 0 gaps; while down, per policy ${JSON.stringify(down)}`,
    );
  }, 120_000);
});
