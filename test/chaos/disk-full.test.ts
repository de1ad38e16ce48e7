/**
 * Fault drill: the database's disk fills up. The daemon's database lives in a tablespace on a small
 * tmpfs (`create database … tablespace`, so the ledger's tables and pg-boss's are all there; the
 * WAL stays on the server's own disk), while per-second jobs of each catch-up policy fire at a
 * counting webhook receiver. A file then takes every free byte of the tmpfs: API writes answer 503
 * "the database is out of disk space" and leave nothing behind, the daemon's log says so, nothing
 * is delivered twice; once the file is deleted, firing resumes and the ledger accounts for the
 * full spell per catch-up policy.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statfsSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { ApiError } from "../../src/cli/client.ts";
import type { DiskSpace } from "../../src/db/disk-space.ts";
import { SERVER_URL } from "../helpers/db.ts";
import { countBy, countingReceiver, coverage, sleep } from "../helpers/chaos.ts";
import { drillServes, ledgerRuns, perSecondFiring, settled, waitReady } from "../helpers/drill-daemons.ts";
import { prerequisite } from "../helpers/prerequisite.ts";
import { runMissiond } from "../helpers/process.ts";
import {
  pgRunner,
  privatePostgresUnavailable,
  startPrivatePostgres,
  type PrivatePostgres,
} from "../helpers/private-postgres.ts";
import { waitFor } from "../helpers/wait.ts";

// Room for a fresh database (a copy of template1, ~8 MB), the migrations and pg-boss's schema.
const TMPFS_SIZE = "64m";
const RESUME_MS = 10_000;

/** Why a tmpfs cannot be mounted here, or null when it can. */
function tmpfsUnavailable(): string | null {
  const probe = mkdtempSync(join(tmpdir(), "missiond-tmpfs-probe-"));
  try {
    const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe], { encoding: "utf8" });
    if (mounted.status !== 0)
      return `mounting a tmpfs is not permitted here (mount: ${mounted.stderr.trim() || mounted.error?.message})`;
    spawnSync("umount", [probe]);
    return null;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

const unavailable = SERVER_URL ? prerequisite(privatePostgresUnavailable() ?? tmpfsUnavailable()) : null;
const skipReason = !SERVER_URL ? "runs in the Postgres pass of the suite (DATABASE_URL set)" : unavailable;

describe.skipIf(skipReason !== null)(`Disk full drill${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  let cluster: PrivatePostgres | null = null;
  let mountPoint: string | null = null;
  let receiver: Awaited<ReturnType<typeof countingReceiver>> | null = null;
  const drill = drillServes("disk-full");

  afterAll(async () => {
    await drill.stop();
    await receiver?.close();
    cluster?.destroy();
    if (mountPoint) {
      spawnSync("umount", ["-l", mountPoint]);
      rmSync(mountPoint, { recursive: true, force: true });
    }
  });

  it("with the database's disk full: writes answer 503 naming it and leave nothing behind, the log says so, nothing delivered twice; firing resumes once space is freed", async () => {
    cluster = await startPrivatePostgres();
    mountPoint = mkdtempSync(join(tmpdir(), "missiond-small-disk-"));
    const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${TMPFS_SIZE}`, "tmpfs", mountPoint], {
      encoding: "utf8",
    });
    expect(mounted.status, mounted.stderr).toBe(0);
    const location = join(mountPoint, "tablespace");
    mkdirSync(location);
    pgRunner().own(location);
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create tablespace small location '${location}'`);
    await admin`create database ledger tablespace small`;
    await admin.end();
    const url = cluster.url.replace(/\/postgres$/, "/ledger");

    receiver = await countingReceiver();
    const serve = (await drill.start(["full"], url, receiver.url))[0]!;
    const { jobs, from } = await perSecondFiring(serve.api);
    await sleep(3_000);

    // Every free byte of the tmpfs, to a file of its own.
    const filler = join(mountPoint, "filler");
    const { bavail, bsize } = statfsSync(mountPoint);
    const filled = spawnSync("fallocate", ["-l", String(bavail * bsize), filler], { encoding: "utf8" });
    expect(filled.status, filled.stderr).toBe(0);
    const fullAt = Date.now();

    // Writes go on until one needs a page the disk no longer has.
    const answered: string[] = [];
    let refused: { status: number; code: string | undefined; message: string; write: string } | null = null;
    await waitFor(
      async () => {
        const message = `while full ${answered.length}`;
        try {
          await serve.api.post("/v1/notify", { sessionId: "s1", message, delaySeconds: 1 });
          answered.push(message);
          return false;
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          refused = { status: err.status, code: err.code, message: err.message, write: message };
          return true;
        }
      },
      "an API write to be refused for want of disk",
      30_000,
      200,
    );
    const refusedAt = Date.now();
    // Full until a claim of the scheduler's own has failed for want of a page too (its rows fit in
    // pages already there for a while), at least 5 s in all.
    await waitFor(() => /firing failed/.test(serve.serve.output()), "a firing to fail for want of disk", 20_000, 100);
    await sleep(Math.max(1_000, fullAt + 5_000 - Date.now()));
    const firingFailures = (serve.serve.output().match(/firing failed/g) ?? []).length;
    const logSaysFull = /out of disk space|No space left on device/.test(serve.serve.output());
    const readyWhileFull = await serve.api.get<{ ready: boolean }>("/readyz").then(
      (r) => r.ready,
      (err: ApiError) => err.status,
    );
    const doctorWhileFull = await serve.api.get<{ ok: boolean; disk: DiskSpace | null }>("/v1/doctor");
    const doctorCli = await runMissiond(["doctor"], {
      cwd: serve.dir,
      env: { MISSIOND_SOCKET: join(serve.dir, "missiond.sock") },
    });

    unlinkSync(filler);
    const freedAt = Date.now();
    await waitReady(serve, "to be ready once space is freed", 10_000);
    const readyAfterMs = Date.now() - freedAt;
    const doctorAfter = await serve.api.get<{ disk: DiskSpace | null }>("/v1/doctor");
    await sleep(5_000);
    const to = Math.floor(Date.now() / 1000) * 1000 - 1_000;
    for (const id of jobs.values()) await serve.api.post(`/v1/cron-jobs/${id}/pause`, {});
    await settled(url, undefined, [serve]);
    const runs = await ledgerRuns(url);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    const timers = await sql<{ id: string; status: string; message: string }[]>`
      select id::text as id, status, requested_message as message from notify_timers where requested_message like 'while full %'`;
    await sql.end();

    const refusal = refused as { status: number; code: string | undefined; message: string; write: string } | null;
    expect(refusal).toMatchObject({ status: 503, code: "DATABASE" });
    expect(refusal!.message).toMatch(/^the database is out of disk space: .*No space left on device/);
    expect(logSaysFull, "the daemon's log names the full disk").toBe(true);
    // Readiness and doctor say so, naming the tablespace's path and its free bytes; and stop once freed.
    expect(readyWhileFull, "readyz while full").toBe(503);
    expect(doctorWhileFull.ok).toBe(false);
    expect(doctorWhileFull.disk).toMatchObject({ path: location, full: true });
    expect(doctorWhileFull.disk!.freeBytes).toBeLessThan(1024 * 1024);
    expect(doctorCli.code, doctorCli.stdout + doctorCli.stderr).toBe(1);
    expect(doctorCli.stdout).toContain(
      `disk: the database's disk is full: ${doctorWhileFull.disk!.freeBytes} bytes free`,
    );
    expect(doctorCli.stdout).toContain(location);
    expect(doctorAfter.disk).toMatchObject({ path: location, full: false });
    // Nothing half-written: the refused write left no row; each answered one is there, delivered once.
    expect(timers.map((t) => t.message).sort()).toEqual([...answered].sort());
    for (const t of timers) {
      expect(t.status, t.message).toBe("Delivered");
      expect(receiver.notes.get(t.id), t.message).toBe(1);
    }

    const cover = coverage(runs, [...jobs.keys()], from, to);
    expect(cover.gaps, `slots without a row (of ${cover.expected})`).toEqual([]);
    expect(cover.duplicates).toEqual([]);
    expect(runs.filter((r) => r.status !== "Succeeded" && r.status !== "Missed")).toEqual([]);
    expect([...receiver.cron, ...receiver.notes].filter(([, n]) => n > 1)).toEqual([]);
    const firstAfter = Math.min(...runs.filter((r) => r.claimedAt >= freedAt).map((r) => r.claimedAt));
    expect(firstAfter - freedAt).toBeLessThan(RESUME_MS);
    const full = runs.filter((r) => r.slot >= refusedAt && r.slot < freedAt);
    console.log(
      `[disk-full] tmpfs ${TMPFS_SIZE} filled; first refused write ${refusedAt - fullAt} ms later (${answered.length} answered before it): ${JSON.stringify(refusal)}; ` +
        `readyz while full: ${readyWhileFull}, ready again ${readyAfterMs} ms after space was freed; doctor while full: ${JSON.stringify(doctorWhileFull.disk)}; log names it: ${logSaysFull}, "firing failed" ${firingFailures} times; full for ${freedAt - fullAt} ms; first claim ${firstAfter - freedAt} ms after space was freed; ` +
        `slots while full ${JSON.stringify(countBy(full, (r) => `${r.job} ${r.status}`))}; ${cover.expected} slots in the window, 0 gaps, 0 duplicates; statuses ${JSON.stringify(countBy(runs, (r) => r.status))}`,
    );
  }, 90_000);
});
