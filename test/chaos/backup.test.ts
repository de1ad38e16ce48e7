/**
 * Fault drill: the database is restored from a backup. A daemon on a private cluster runs
 * per-second jobs of each catch-up policy at a counting webhook receiver; `pg_dump` is taken while
 * it fires; the daemon goes on a few seconds more, then stops (the database is lost). The dump is
 * restored into a fresh database and a daemon started there: no slot the dump's ledger holds is
 * delivered again, and the slots after the dump (which the restored ledger never saw) are Missed or
 * run as each job's catch-up policy says, as after any downtime.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { SERVER_URL } from "../helpers/db.ts";
import { countBy, countingReceiver, coverage, sleep } from "../helpers/chaos.ts";
import { deliveryKey, drillServes, ledgerRuns, perSecondFiring, type RunRow } from "../helpers/drill-daemons.ts";
import { waitFor } from "../helpers/wait.ts";
import { prerequisite } from "../helpers/prerequisite.ts";
import {
  clusterBase,
  pgRunner,
  privatePostgresUnavailable,
  startPrivatePostgres,
  type PrivatePostgres,
} from "../helpers/private-postgres.ts";

// Slots claimed more than this late count as backfilled (src/cron/catchup.ts MISFIRE_GRACE_MS).
const GRACE_MS = 2_000;

const unavailable = SERVER_URL ? prerequisite(privatePostgresUnavailable()) : null;
const skipReason = !SERVER_URL ? "runs in the Postgres pass of the suite (DATABASE_URL set)" : unavailable;

describe.skipIf(skipReason !== null)(`Backup and restore drill${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  let cluster: PrivatePostgres | null = null;
  let receiver: Awaited<ReturnType<typeof countingReceiver>> | null = null;
  const drill = drillServes("backup");

  afterAll(async () => {
    await drill.stop();
    await receiver?.close();
    cluster?.destroy();
  });

  it("a daemon on a database restored from a pg_dump taken while firing delivers no slot of the dump again, and handles the slots after it per catch-up policy", async () => {
    cluster = await startPrivatePostgres();
    receiver = await countingReceiver();
    const source = (await drill.start(["source"], cluster.url, receiver.url))[0]!;
    const { jobs, from } = await perSecondFiring(source.api);
    await sleep(3_000);

    // The dump, in pg_dump's custom format, while the jobs fire.
    const pg = pgRunner();
    const dumpDir = clusterBase();
    const dumpFile = join(dumpDir, "missiond.dump");
    const dumpAt = Date.now();
    await pg.run("pg_dump", [
      "-h",
      "127.0.0.1",
      "-p",
      String(cluster.port),
      "-U",
      "postgres",
      "-Fc",
      "-f",
      dumpFile,
      "postgres",
    ]);
    const dumpMs = Date.now() - dumpAt;
    await sleep(3_000);
    source.serve.kill("SIGTERM");
    await source.serve.exited;
    const lostAt = Date.now();
    const beforeRestore = new Map(receiver.cron);
    const sourceRuns = await ledgerRuns(cluster.url);

    // Restored into a fresh database of the same server.
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    await admin`create database restored`;
    await admin.end();
    const restoreAt = Date.now();
    await pg.run("pg_restore", [
      "-h",
      "127.0.0.1",
      "-p",
      String(cluster.port),
      "-U",
      "postgres",
      "-d",
      "restored",
      dumpFile,
    ]);
    const restoreMs = Date.now() - restoreAt;
    const restoredUrl = cluster.url.replace(/\/postgres$/, "/restored");
    const dumped = await ledgerRuns(restoredUrl);
    expect(dumped.length, "runs in the dump").toBeGreaterThan(0);

    const restored = (await drill.start(["restored"], restoredUrl, receiver.url))[0]!;
    const startedAt = Date.now();
    await sleep(3_000);
    const to = Math.floor(Date.now() / 1000) * 1000 - 1_000;
    for (const id of jobs.values()) await restored.api.post(`/v1/cron-jobs/${id}/pause`, {});
    // Every run the restored daemon made is closed. A run the dump caught executing stays open until
    // its pg-boss job's heartbeat (30 s) lapses and crash truth closes it Unknown: not waited for
    // here (the drill would last a minute more), only checked never to be delivered again.
    const openInDump = new Set(dumped.filter((r) => r.status === "Claimed" || r.status === "Running").map(deliveryKey));
    const stillOpen = (rows: RunRow[]) =>
      rows.filter((r) => (r.status === "Claimed" || r.status === "Running") && !openInDump.has(deliveryKey(r)));
    const settleAt = Date.now();
    const runs = await waitFor(
      async () => {
        const rows = await ledgerRuns(restoredUrl);
        return stillOpen(rows).length === 0 ? rows : null;
      },
      "the restored daemon's runs to be closed",
      30_000,
      250,
    );
    const settleMs = Date.now() - settleAt;

    // The dump's slots: none delivered again (a run open in the dump is closed by crash truth, not
    // replayed); so every slot the dump holds reached the agent at most once.
    const again = dumped.map(deliveryKey).filter((key) => {
      const before = beforeRestore.get(key) ?? 0;
      const total = receiver!.cron.get(key) ?? 0;
      return total > Math.max(1, before) || (before > 0 && total !== before);
    });
    expect(again, "slots of the dump delivered twice, or before the dump and again after the restore").toEqual([]);

    // Every slot of the window has one row in the restored ledger.
    const cover = coverage(runs, [...jobs.keys()], from, to);
    expect(cover.gaps, `slots without a row (of ${cover.expected})`).toEqual([]);
    expect(cover.duplicates).toEqual([]);
    expect(stillOpen(runs)).toEqual([]);

    // After the dump: slots the restored ledger never saw, handled by the catch-up when it started.
    const after: Record<string, Record<string, number>> = {};
    const dumpedSlots = new Set(dumped.map(deliveryKey));
    for (const name of jobs.keys()) {
      const unseen = runs.filter(
        (r) => r.job === name && !dumpedSlots.has(deliveryKey(r)) && r.slot < startedAt - GRACE_MS,
      );
      expect(unseen.length, name).toBeGreaterThanOrEqual(2);
      const ranLate = unseen.filter((r) => r.latenessMs > GRACE_MS && r.status !== "Missed");
      for (const r of unseen.filter((r) => r.status === "Missed"))
        expect(r.reason, name).toContain(`(catch-up policy ${name === "all-3" ? "all" : name})`);
      if (name === "skip") expect(ranLate, name).toEqual([]);
      if (name === "latest") expect(ranLate.length, name).toBeLessThanOrEqual(1);
      if (name === "all-3") expect(ranLate.length, name).toBeLessThanOrEqual(3);
      after[name] = countBy(unseen, (r) => r.status);
    }
    const redone = runs.filter(
      (r) =>
        !dumpedSlots.has(deliveryKey(r)) && r.status === "Succeeded" && (beforeRestore.get(deliveryKey(r)) ?? 0) > 0,
    ).length;
    console.log(
      `[backup] pg_dump ${dumpMs} ms (${readFileSync(dumpFile).length} bytes) while firing, pg_restore ${restoreMs} ms; ` +
        `${dumped.length} runs in the dump (${sourceRuns.length} in the source when it stopped, ${lostAt - dumpAt} ms after the dump); ` +
        `0 slots of the dump delivered again; after the dump, per policy: ${JSON.stringify(after)} ` +
        `(${redone} of them delivered by the source after the dump and again after the restore, as the catch-up policy runs them); ` +
        `${cover.expected} slots in the window, 0 gaps; the restored daemon's runs closed ${settleMs} ms after the pause (${JSON.stringify(countBy(dumped, (r) => r.status))} in the dump, ${JSON.stringify(countBy(runs, (r) => r.status))} after)`,
    );
  }, 120_000);
});
