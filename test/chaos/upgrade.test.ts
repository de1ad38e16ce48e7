/**
 * Upgrade drill: the previous release, installed from its package, runs per-second jobs of each
 * catch-up policy and notify timers on a database it migrated from nothing, counted at a webhook
 * receiver. It is stopped (SIGTERM), and after a few seconds down this checkout's daemon starts on
 * the same database: its migrations apply, the slots of the gap are handled per catch-up policy,
 * the timers due meanwhile are delivered once, late. Then a rolling upgrade: a daemon of the
 * previous release starts again, after the new release's migrations ran, and both fire from the
 * one database for a while (jobs and timers added through each). Nothing fires twice, nothing is
 * lost, every slot of the whole window has exactly one row.
 *
 * Runs once, in the Postgres pass of the suite, on a database of its own on the test server.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import { knownMigrations } from "../../src/db/migration-check.ts";
import { coverage, countBy, countingReceiver, sleep } from "../helpers/chaos.ts";
import { emptyDatabase, SERVER_URL, type TestDatabase } from "../helpers/db.ts";
import { prerequisite } from "../helpers/prerequisite.ts";
import { previousReleaseUnavailable, serveRelease, type Serve } from "../helpers/previous-release.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const KNOWN = knownMigrations(fileURLToPath(new URL("../../drizzle", import.meta.url)));
// The install step: how long no daemon runs between the old one's stop and the new one's start.
const DOWN_MS = 4_000;
// Old and new on one database at once.
const ROLLING_MS = 15_000;
// Slots claimed more than this late count as backfilled (src/cron/catchup.ts MISFIRE_GRACE_MS).
const GRACE_MS = 2_000;
const SETTLE_MS = 60_000;
const TIMERS_PER_SECOND = 2;

const unavailable = SERVER_URL ? prerequisite(previousReleaseUnavailable()) : null;
const skipReason = !SERVER_URL ? "runs in the Postgres pass of the suite (DATABASE_URL set)" : unavailable;

interface Daemon {
  serve: Serve;
  api: ApiClient;
}

describe.skipIf(skipReason !== null)(
  `upgrade drill: the previous release's package, then this one, then both on one database${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    let db: TestDatabase | null = null;
    let receiver: Awaited<ReturnType<typeof countingReceiver>> | null = null;
    const daemons: Daemon[] = [];

    afterAll(async () => {
      if (process.env.CHAOS_DEBUG)
        for (const d of daemons)
          writeFileSync(join(process.env.CHAOS_DEBUG, `upgrade-${d.serve.name}.log`), d.serve.output());
      for (const d of daemons) d.serve.kill();
      await Promise.all(daemons.map((d) => d.serve.exited));
      await receiver?.close();
      await db?.drop();
    });

    const start = async (release: "previous" | "current", name: string): Promise<Daemon> => {
      const dir = tempDir(`upgrade-${name}`);
      writeFileSync(
        join(dir, "config.toml"),
        `[scheduler]\npoll_interval = "2s"\n\n[agents.hook]\nexecutor = "webhook"\nurl = "${receiver!.url}"\ntimeout = "10s"\n`,
      );
      const serve = serveRelease(release, name, {
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
      const daemon = { serve, api: apiClient({ socketPath: join(dir, "missiond.sock") }) };
      daemons.push(daemon);
      await waitFor(
        async () => {
          if (!serve.running()) throw new Error(`${name} exited before it was ready:\n${serve.output()}`);
          return (await daemon.api.get<{ ready: boolean }>("/readyz").catch(() => null))?.ready;
        },
        `${name} to be ready`,
        60_000,
        100,
      );
      return daemon;
    };

    it(`stop the previous release, ${DOWN_MS / 1000} s down, start this one (migrations apply), then ${ROLLING_MS / 1000} s of both at once: 0 duplicates, 0 lost, the gap per catch-up policy`, async () => {
      db = await emptyDatabase();
      receiver = await countingReceiver();
      const sql = postgres(db.url!, { max: 1, onnotice: () => {} });
      try {
        // The previous release, on a database it migrates from nothing.
        const old1 = await start("previous", "old1");
        const oldMigrations = (
          await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`
        )[0]!.n;
        expect(oldMigrations).toBeLessThan(KNOWN.length);

        await old1.api.post("/v1/sessions", { id: "s1", agentId: "hook" });
        const jobs = new Map<string, string>(); // name → id
        const policies = [
          { name: "latest", catchupPolicy: "latest" },
          { name: "all-3", catchupPolicy: "all", catchupMax: 3 },
          { name: "skip", catchupPolicy: "skip" },
        ] as const;
        for (const { name, ...policy } of policies) {
          const job = await old1.api.post<{ id: string }>("/v1/cron-jobs", {
            name,
            agentId: "hook",
            cron: "* * * * * *",
            prompt: "p",
            overlapPolicy: "allow",
            ...policy,
          });
          jobs.set(name, job.id);
        }
        const from = Math.ceil(Date.now() / 1000) * 1000 + 1_000;

        // Timers all along, through whichever daemon is up (none while it is down).
        let live: Daemon[] = [old1];
        const timersSet: string[] = [];
        let setting = true;
        const setter = (async () => {
          for (let i = 0; setting; i++) {
            await sleep(1000 / TIMERS_PER_SECOND);
            const d = live[i % Math.max(1, live.length)];
            if (!d) continue;
            await d.api
              .post<{ id: string }>("/v1/notify", { sessionId: "s1", message: `wake ${i}`, delaySeconds: 1 + (i % 3) })
              .then((timer) => timersSet.push(timer.id));
          }
        })();
        await sleep(4_000);
        // Timers due while no daemon runs.
        const dueWhileDown: string[] = [];
        for (const delaySeconds of [2, 3])
          dueWhileDown.push(
            (await old1.api.post<{ id: string }>("/v1/notify", { sessionId: "s1", message: "down", delaySeconds })).id,
          );

        // The upgrade: stop the old one, the new package goes in, start the new one.
        live = [];
        const stopAt = Date.now();
        expect(await old1.serve.stop()).toBe(0);
        const stoppedAt = Date.now();
        await sleep(DOWN_MS);
        const startAt = Date.now();
        const new1 = await start("current", "new1");
        const readyAt = Date.now();
        live = [new1];
        const applied = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
        expect(applied[0]!.n, "every migration of this release applied").toBe(KNOWN.length);
        const named = await sql<{ tag: string }[]>`select tag from drizzle.missiond_migrations order by created_at`;
        expect(named.map((r) => r.tag)).toEqual(KNOWN.map((m) => m.tag));

        // The rolling upgrade: the previous release starts again, on the database the new one
        // migrated, and both fire from it; each takes changes through its own API.
        await sleep(2_000);
        const old2 = await start("previous", "old2");
        live = [new1, old2];
        const rollingFrom = Date.now();
        const described = await new1.api.post<{ id: string }>("/v1/cron-jobs", {
          name: "described",
          description: "added through the new release",
          agentId: "hook",
          cron: "* * * * * *",
          prompt: "p",
          overlapPolicy: "allow",
        });
        const plain = await old2.api.post<{ id: string }>("/v1/cron-jobs", {
          name: "plain",
          agentId: "hook",
          cron: "* * * * * *",
          prompt: "p",
          overlapPolicy: "allow",
        });
        const rollingJobsFrom = Math.ceil(Date.now() / 1000) * 1000 + 1_000;
        // An edit through the previous release of a job the new one described keeps the description.
        await old2.api.patch(`/v1/cron-jobs/${described.id}`, { prompt: "edited by the previous release" });
        await sleep(Math.max(0, rollingFrom + ROLLING_MS - Date.now()));
        live = [new1];
        const rollingTo = Date.now();
        expect(await old2.serve.stop()).toBe(0);
        await sleep(2_000);
        setting = false;
        await setter;
        const to = Math.floor(Date.now() / 1000) * 1000 - 1_000;
        for (const id of [...jobs.values(), described.id, plain.id])
          await new1.api.post(`/v1/cron-jobs/${id}/pause`, {});

        const settleStarted = Date.now();
        await waitFor(
          async () => {
            const [open] = await sql<{ runs: number; timers: number }[]>`
              select (select count(*)::int from cron_job_runs where status in ('Claimed', 'Running')) as runs,
                     (select count(*)::int from notify_timers where status in ('Pending', 'Claimed', 'Delivering')) as timers`;
            return open!.runs === 0 && open!.timers === 0;
          },
          "every run and timer to be closed",
          SETTLE_MS,
          250,
        );
        const settleMs = Date.now() - settleStarted;
        await sleep(1_000); // a late duplicate delivery, if any, would arrive now

        const runs = (
          await sql<
            { job: string; slot: Date; status: string; claimed_at: Date; lateness_ms: number; claimed_by: string }[]
          >`select j.name as job, r.scheduled_for as slot, r.status, r.claimed_at, r.lateness_ms, r.claimed_by
            from cron_job_runs r join cron_jobs j on j.id = r.cron_job_id order by r.scheduled_for`
        ).map((r) => ({ ...r, slot: r.slot.getTime(), claimedAt: r.claimed_at.getTime() }));
        const timers = await sql<{ id: string; status: string; attempts: number; lateness_ms: number }[]>`
          select id::text as id, status, attempts, lateness_ms from notify_timers order by id`;
        const [edited] = await sql<{ description: string | null; prompt: string }[]>`
          select description, prompt from cron_jobs where id = ${described.id}`;

        // Every slot of the window has exactly one row, through the stop, the gap, the new start
        // and the rolling phase; every delivery reached the agent once.
        const steady = coverage(runs, ["latest", "all-3"], from, to);
        const added = coverage(runs, ["described", "plain"], rollingJobsFrom, to);
        expect(steady.gaps, `slots without a row (of ${steady.expected})`).toEqual([]);
        expect(added.gaps, `slots of the jobs added while rolling without a row (of ${added.expected})`).toEqual([]);
        expect([...steady.duplicates, ...added.duplicates]).toEqual([]);
        expect([...receiver.cron].filter(([, n]) => n > 1)).toEqual([]);
        expect([...receiver.notes].filter(([, n]) => n > 1)).toEqual([]);
        expect(runs.filter((r) => !["Succeeded", "Missed"].includes(r.status))).toEqual([]);
        // Each slot run was delivered: the receiver saw as many missions as the ledger has successes.
        expect([...receiver.cron.values()].reduce((a, b) => a + b, 0)).toBe(
          runs.filter((r) => r.status === "Succeeded").length,
        );
        // Every timer set was delivered once (none lost across the stop, the migrations, or the two releases).
        const byId = new Map(timers.map((t) => [t.id, t]));
        for (const id of [...timersSet, ...dueWhileDown]) {
          expect(byId.get(id), `timer ${id}`).toMatchObject({ status: "Delivered", attempts: 1 });
          expect(receiver.notes.get(id), `deliveries of timer ${id}`).toBe(1);
        }
        expect(timers.length).toBe(timersSet.length + dueWhileDown.length);
        for (const id of dueWhileDown) expect(byId.get(id)!.lateness_ms).toBeGreaterThanOrEqual(0);
        expect(edited).toEqual({
          description: "added through the new release",
          prompt: "edited by the previous release",
        });

        // The gap: claimed by the new release once it started, together in its first catch-up batch
        // per job, each Missed or run late as the job's policy says (as after any downtime).
        const gap: Record<string, Record<string, number>> = {};
        for (const name of ["latest", "all-3", "skip"]) {
          const due = runs.filter((r) => r.job === name && r.slot > stoppedAt + 250 && r.slot < startAt);
          expect(due.length, `${name}: slots of the gap`).toBeGreaterThanOrEqual(Math.floor(DOWN_MS / 1000) - 1);
          const firstClaim = Math.min(
            ...runs.filter((r) => r.job === name && r.claimed_by === "new1").map((r) => r.claimedAt),
          );
          const batch = runs.filter((r) => r.job === name && r.claimedAt === firstClaim);
          expect(
            batch.map((r) => r.slot),
            `${name}: the first batch covers the gap`,
          ).toEqual(expect.arrayContaining(due.map((r) => r.slot)));
          // A slot within the grace is on time and runs whatever the policy; the policy decides the late ones.
          const late = batch.filter((r) => r.lateness_ms > GRACE_MS);
          const ranLate = late.filter((r) => r.status === "Succeeded").map((r) => r.slot);
          expect(batch.filter((r) => r.lateness_ms <= GRACE_MS && r.status === "Missed")).toEqual([]);
          // latest: the newest late slot runs when no slot is on time; all-3: the newest three; skip: none.
          if (name === "latest") expect(ranLate).toEqual(late.length === batch.length ? [late.at(-1)!.slot] : []);
          else if (name === "all-3") expect(ranLate).toEqual(late.slice(-3).map((r) => r.slot));
          else expect(ranLate).toEqual([]);
          gap[name] = countBy(due, (r) => r.status);
        }
        // Firing again after the start: the first slot claimed by the new release.
        const firstClaim = Math.min(...runs.filter((r) => r.claimed_by === "new1").map((r) => r.claimedAt));

        // Both releases fired during the rolling phase, from the one ledger.
        const rolling = runs.filter((r) => r.slot >= rollingFrom && r.slot <= rollingTo);
        const byRelease = countBy(rolling, (r) => r.claimed_by);
        expect(byRelease.old2, "slots the previous release claimed while both ran").toBeGreaterThan(0);
        expect(byRelease.new1, "slots the new release claimed while both ran").toBeGreaterThan(0);
        const claimedBy = countBy(runs, (r) => r.claimed_by);

        console.log(
          `[upgrade] previous release migrated ${oldMigrations} migrations; stop ${stoppedAt - stopAt} ms, down ${startAt - stoppedAt} ms; ` +
            `this release: ${KNOWN.length - oldMigrations} migrations applied, ready ${readyAt - startAt} ms after its start, first claim ${firstClaim - startAt} ms after it; ` +
            `gap slots per policy ${JSON.stringify(gap)}; rolling ${rollingTo - rollingFrom} ms, slots claimed ${JSON.stringify(byRelease)}; ` +
            `${steady.expected + added.expected} slots in the window, 0 gaps, 0 duplicates; all slots claimed ${JSON.stringify(claimedBy)}; ` +
            `${timersSet.length + dueWhileDown.length} timers delivered once each; settled in ${settleMs} ms`,
        );
      } finally {
        await sql.end();
      }
    }, 150_000);
  },
);
