/**
 * Fault drill: three `missiond serve` processes share one Postgres database under a steady load
 * (per-second cron jobs and notify timers set all along, delivered to a webhook receiver in this
 * test), and every few seconds one of them is SIGKILLed and a replacement started. Once the load
 * stops and the survivors have cleaned up after the dead, every slot has exactly one row, every
 * timer is closed, and the receiver saw nothing twice.
 *
 * What the survivors clean up, and how long it takes (the settle wait below allows for it):
 * - a slot a dead instance claimed but had not handed off stays Claimed until it is older than the
 *   longest cronJobFiring chain + 30 s (no plugins here: 30 s), then a recovery pass (every
 *   poll_interval) takes it over and runs it;
 * - a mission a dead instance was executing is noticed by pg-boss when its heartbeat (30 s) has
 *   lapsed, at its next supervision pass (up to 60 s), retried elsewhere and closed Unknown, not
 *   replayed (the dead instance may have delivered it);
 * - a timer a dead instance claimed goes back to Pending after the same 30 s and is delivered;
 *   one whose delivery it had started closes Unknown, like a mission.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import { SERVER_URL, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { coverage, countBy, countingReceiver, sleep } from "../helpers/chaos.ts";
import { spawnServe } from "../helpers/process.ts";
import { waitFor } from "../helpers/wait.ts";
import { tempDir } from "../helpers/tmp.ts";

const LOAD_MS = Number(process.env.CHAOS_SIGKILL_LOAD_MS ?? 30_000);
const KILL_EVERY_MS = Number(process.env.CHAOS_SIGKILL_EVERY_MS ?? 4_000);
const JOBS = 20;
const SESSIONS = 5;
// Timers set per second, each due 1–3 s later.
const TIMERS_PER_SECOND = 3;
const RECEIVER_DELAY_MS = 300;
// Longest the survivors may need (see above): 30 s heartbeat + 60 s supervision + retry + margin.
const SETTLE_MS = 150_000;

interface Daemon {
  name: string;
  serve: ReturnType<typeof spawnServe>;
  api: ApiClient;
  ready: boolean;
  killed: boolean;
}

describe.skipIf(!SERVER_URL)(
  "SIGKILL drill: three serve processes on one Postgres, one killed every few seconds (needs a Postgres server: DATABASE_URL)",
  () => {
    let db: TestDatabase | null = null;
    let receiver: Awaited<ReturnType<typeof countingReceiver>> | null = null;
    const daemons: Daemon[] = [];

    afterAll(async () => {
      for (const d of daemons) if (d.serve.exitCode === null && d.serve.signalCode === null) d.serve.kill("SIGKILL");
      await Promise.all(daemons.map((d) => d.serve.exited));
      await receiver?.close();
      await db?.drop();
    });

    it(
      `${JOBS} per-second jobs and ${TIMERS_PER_SECOND} timers a second for ${LOAD_MS / 1000} s, SIGKILL every ${KILL_EVERY_MS / 1000} s: 0 gaps, 0 duplicated rows or deliveries, 0 lost timers`,
      async () => {
        db = await freshDatabase();
        // The agents answer within 0–300 ms, so a kill finds missions and notes mid-delivery.
        receiver = await countingReceiver({ delayMs: () => Math.random() * RECEIVER_DELAY_MS });
        const sql = postgres(db.url!, { max: 2, onnotice: () => {} });
        let started = 0;
        const start = (): Daemon => {
          const name = `k${++started}`;
          const dir = tempDir(`sigkill-${name}`);
          // Recovery passes every 2 s (the staleness thresholds above are what they are). Four places
          // on each direct lane: of the seven or so runs a daemon claims each second, the rest wait in
          // its queue and take their turns (recorded in lane_turns), so a kill also finds runs that
          // took their turn and runs still waiting for one.
          writeFileSync(
            join(dir, "config.toml"),
            `[scheduler]\npoll_interval = "2s"\n\n[missions]\nconcurrency = 4\n\n[agents.hook]\nexecutor = "webhook"\nurl = "${receiver!.url}"\ntimeout = "10s"\n`,
          );
          const serve = spawnServe({
            cwd: dir,
            env: {
              DATABASE_URL: db!.url!,
              MISSIOND_CONFIG: join(dir, "config.toml"),
              MISSIOND_STATE_DIR: dir,
              MISSIOND_INSTANCE_NAME: name,
              MISSIOND_PLUGIN_DIRS: "",
              MISSIOND_LOG_LEVEL: "warn",
            },
          });
          const d: Daemon = {
            name,
            serve,
            api: apiClient({ socketPath: join(dir, "missiond.sock") }),
            ready: false,
            killed: false,
          };
          daemons.push(d);
          void waitFor(
            async () => (await d.api.get<{ ready: boolean }>("/readyz").catch(() => null))?.ready,
            `${name} to be ready`,
            60_000,
            100,
          ).then(
            () => (d.ready = !d.killed),
            () => {},
          );
          return d;
        };
        const live = () => daemons.filter((d) => d.ready && !d.killed);
        const anyLive = () => live()[Math.floor(Math.random() * live().length)]!;

        for (let i = 0; i < 3; i++) start();
        await waitFor(() => live().length === 3, "three daemons to be ready", 60_000, 100);

        const api = anyLive().api;
        for (let i = 1; i <= SESSIONS; i++) await api.post("/v1/sessions", { id: `s${i}`, agentId: "hook" });
        const jobIds: string[] = [];
        for (let i = 1; i <= JOBS; i++) {
          const job = await api.post<{ id: string }>("/v1/cron-jobs", {
            name: `steady-${i}`,
            agentId: "hook",
            cron: "* * * * * *",
            prompt: "p",
            overlapPolicy: "allow",
          });
          jobIds.push(job.id);
        }
        const from = Math.ceil(Date.now() / 1000) * 1000 + 1_000;
        const loadEnds = Date.now() + LOAD_MS;

        // Notify timers, set through whichever daemon is up; a request cut off by a kill may or may
        // not have set its timer (the database says which).
        const timersSet: string[] = [];
        let timerRequestsCut = 0;
        const setter = (async () => {
          while (Date.now() < loadEnds) {
            await sleep(1000 / TIMERS_PER_SECOND);
            const d = anyLive();
            const session = `s${1 + Math.floor(Math.random() * SESSIONS)}`;
            await d.api
              .post<{ id: string }>("/v1/notify", {
                sessionId: session,
                message: `wake ${timersSet.length}`,
                delaySeconds: 1 + Math.floor(Math.random() * 3),
              })
              .then(
                (timer) => timersSet.push(timer.id),
                () => timerRequestsCut++,
              );
          }
        })();

        // The killer: one ready daemon every KILL_EVERY_MS, a replacement started at once. Each kill
        // lands just after a second begins, while that second's slots are being claimed, chained,
        // handed off and delivered, so it leaves work behind in every state.
        const kills: string[] = [];
        while (Date.now() + KILL_EVERY_MS < loadEnds) {
          await sleep(KILL_EVERY_MS - 500);
          await sleep(1000 - (Date.now() % 1000) + Math.random() * 150);
          await waitFor(() => live().length >= 2, "two ready daemons to pick a victim from", 30_000, 100);
          const victim = anyLive();
          victim.killed = true;
          victim.serve.kill("SIGKILL");
          kills.push(victim.name);
          start();
        }
        await setter;
        await sleep(Math.max(0, loadEnds - Date.now()));
        const to = Math.floor(Date.now() / 1000) * 1000 - 1_000;
        await waitFor(() => live().length >= 1, "a ready daemon", 30_000, 100);
        for (const id of jobIds) await anyLive().api.post(`/v1/cron-jobs/${id}/pause`, {});

        // Settle: the survivors take over what the dead left behind (see the file's comment).
        const settleStarted = Date.now();
        const open = async () => {
          const [runs] = await sql<
            { n: number }[]
          >`select count(*)::int as n from cron_job_runs where status in ('Claimed', 'Running')`;
          const [timers] = await sql<
            { n: number }[]
          >`select count(*)::int as n from notify_timers where status in ('Pending', 'Claimed', 'Delivering')`;
          return { runs: runs!.n, timers: timers!.n };
        };
        await waitFor(
          async () => {
            const left = await open();
            return left.runs === 0 && left.timers === 0;
          },
          "every run and timer to be closed",
          SETTLE_MS,
          500,
        );
        const settleMs = Date.now() - settleStarted;
        await sleep(2_000); // a late duplicate delivery, if any, would arrive now

        // A slot claimed again by recovery carries the takeover's claimed_at; a timer claimed again, its new lateness.
        const runs = await sql<
          {
            job_id: string;
            slot: Date;
            status: string;
            claimed_by: string;
            reason: string | null;
            taken_over: boolean;
          }[]
        >`
      select cron_job_id::text as job_id, scheduled_for as slot, status, claimed_by, reason, claimed_at - scheduled_for > interval '20 seconds' as taken_over from cron_job_runs`;
        const timers = await sql<{ id: string; status: string; claimed_by: string | null; reclaimed: boolean }[]>`
      select id::text as id, status, claimed_by, lateness_ms > 20000 as reclaimed from notify_timers`;
        // Turns the lanes recorded in the last minute (older ones pruned once their runs closed).
        const [turns] = await sql<
          { rows: number; runs: number }[]
        >`select count(*)::int as rows, coalesce(sum(cardinality(run_ids)), 0)::int as runs from lane_turns`;
        await sql.end();

        // Cron: every slot of the window has exactly one row; none left open.
        const cover = coverage(
          runs.map((r) => ({ job: r.job_id, slot: r.slot.getTime(), status: r.status })),
          jobIds,
          from,
          to,
        );
        const inWindow = runs.filter((r) => r.slot.getTime() >= from && r.slot.getTime() <= to);
        const runStatuses = countBy(inWindow, (r) => r.status);
        const summary = `${kills.length} kills (${kills.join(", ")}), ${cover.expected} slots in the window, statuses ${JSON.stringify(runStatuses)}`;
        expect(cover.gaps, `slots without a row: ${summary}`).toEqual([]);
        expect(cover.duplicates, `slots with several rows: ${summary}`).toEqual([]);
        expect(inWindow.length).toBe(cover.expected);
        expect(runs.filter((r) => r.status === "Claimed" || r.status === "Running")).toEqual([]);
        // Closed the ways the design allows after a crash: run, closed Unknown (never replayed), or
        // Missed if every instance was too late for it.
        expect(
          Object.keys(runStatuses).every((s) => ["Succeeded", "Unknown", "Missed"].includes(s)),
          summary,
        ).toBe(true);
        expect(kills.length).toBeGreaterThanOrEqual(Math.floor(LOAD_MS / KILL_EVERY_MS) - 1);

        // The receiver: each (job, slot) at most once, exactly once for every Succeeded run.
        const cronDuplicates = [...receiver.cron].filter(([, n]) => n > 1);
        expect(cronDuplicates, `missions delivered more than once: ${summary}`).toEqual([]);
        const succeeded = runs
          .filter((r) => r.status === "Succeeded")
          .map((r) => `${r.job_id}@${r.slot.toISOString()}`);
        expect(
          succeeded.filter((key) => receiver!.cron.get(key) !== 1),
          "Succeeded runs the receiver did not see exactly once",
        ).toEqual([]);
        const unknown = new Set(
          runs.filter((r) => r.status === "Unknown").map((r) => `${r.job_id}@${r.slot.toISOString()}`),
        );
        const unknownDelivered = [...unknown].filter((key) => receiver!.cron.has(key)).length;
        // Nothing reached the receiver that the ledger does not account for (Succeeded, or Unknown).
        const accounted = new Set([...succeeded, ...unknown]);
        expect([...receiver.cron.keys()].filter((key) => !accounted.has(key))).toEqual([]);

        // Timers: each set one is in the ledger and closed, delivered at most once.
        const timerStatuses = countBy(timers, (t) => t.status);
        const timerSummary = `${timers.length} timers (${timersSet.length} confirmed, ${timerRequestsCut} requests cut off by a kill), statuses ${JSON.stringify(timerStatuses)}`;
        const known = new Set(timers.map((t) => t.id));
        expect(
          timersSet.filter((id) => !known.has(id)),
          `timers lost: ${timerSummary}`,
        ).toEqual([]);
        expect(
          Object.keys(timerStatuses).every((s) => s === "Delivered" || s === "Unknown"),
          timerSummary,
        ).toBe(true);
        expect(
          [...receiver.notes].filter(([, n]) => n > 1),
          `notes delivered more than once: ${timerSummary}`,
        ).toEqual([]);
        expect(
          timers.filter((t) => t.status === "Delivered" && receiver!.notes.get(t.id) !== 1).map((t) => t.id),
          "Delivered timers the receiver did not see exactly once",
        ).toEqual([]);
        expect(timersSet.length).toBeGreaterThan((LOAD_MS / 1000) * TIMERS_PER_SECOND * 0.5);

        // The kills did leave work in flight for the survivors to clean up (else this drilled nothing).
        const takenOver = runs.filter((r) => r.taken_over && r.status !== "Missed").length;
        const reclaimed = timers.filter((t) => t.reclaimed).length;
        const timersUnknown = timers.filter((t) => t.status === "Unknown").length;
        expect(takenOver + unknown.size + reclaimed + timersUnknown, "work a kill interrupted").toBeGreaterThan(0);

        console.log(
          `[sigkill] ${summary}; after the kills: ${takenOver} Claimed slots taken over and run, ${unknown.size} runs closed Unknown (${unknownDelivered} of them had reached the receiver), ` +
            `${reclaimed} Claimed timers claimed again, ${timersUnknown} closed Unknown; ` +
            `${receiver.cron.size} missions received, 0 twice; ${timerSummary}; ${receiver.notes.size} notes received, 0 twice; settled in ${settleMs} ms; ` +
            `${turns!.runs} turns in ${turns!.rows} lane_turns rows still kept; claims by instance ${JSON.stringify(countBy(inWindow, (r) => r.claimed_by))}; timers by instance ${JSON.stringify(countBy(timers, (t) => t.claimed_by ?? "none"))}`,
        );
      },
      60_000 + LOAD_MS + SETTLE_MS,
    );
  },
);
