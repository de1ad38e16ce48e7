/**
 * A wave of notes due at one instant: the scheduler claims its later notes further ahead than
 * claim_ahead (burst leads). Those are handed off in the claim's turn to the direct lane, which holds
 * them until their moment without counting their attempt, then delivers them as places free; none
 * goes round pg-boss's fetch.
 */
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { rows } from "../../src/db/client.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { deliveryAttempts, scrape } from "../helpers/metrics.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();
const WAVE = 250;

describe(`a notify wave (${backendName})`, () => {
  it(`${WAVE} notes due at one instant, on 32 places (and 256 in the lane's queue): the ones claimed early wait on the direct lane uncounted, then all are delivered once, at or after their moment, none through pg-boss's fetch`, async () => {
    // A claim_ahead of a second leaves a wide window to see the early hand-off in, however loaded the
    // machine (at the default 250 ms it is ~250 ms wide and a slow claim can all but close it).
    const daemon = await t.start({ toml: `[scheduler]\nclaim_ahead = "1s"\n\n[missions]\nconcurrency = 32\n` });
    await daemon.services.sessions.create({ id: "s1", agentId: "a1" });
    const db = daemon.services.database.db;
    const due = Date.now() + 3_000;
    // Written as the service writes them, so that they share one instant.
    await db.execute(sql`
      insert into notify_timers (session_id, agent_id, status, requested_message, requested_delay_seconds, message, delay_seconds, due_at, created_at)
      select 's1', 'a1', 'Pending', 'wave ' || g, 3, 'wave ' || g, 3, ${new Date(due).toISOString()}::timestamptz, now()
      from generate_series(1, ${WAVE}) as g`);
    daemon.services.scheduler.poke();

    // Until just before the moment: handed off (Delivering, the job active for this instance), with
    // no attempt counted yet; more of them than the lane has places.
    let early = 0;
    while (Date.now() < due - 40) {
      const [found] = await rows<{ n: number; delivered: number }>(
        db,
        sql`select count(*) filter (where t.status = 'Delivering' and t.attempts = 0 and j.state = 'active')::int as n,
                   count(*) filter (where t.status = 'Delivered')::int as delivered
            from notify_timers t left join pgboss.job j on j.id::text = t.mission_job_id`,
      );
      expect(found!.delivered).toBe(0);
      early = Math.max(early, found!.n);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(early).toBeGreaterThan(32);

    await waitFor(
      async () => {
        const [found] = await rows<{ n: number }>(
          db,
          sql`select count(*)::int as n from notify_timers where status = 'Delivered'`,
        );
        return found!.n === WAVE;
      },
      "every note delivered",
      30_000,
    );
    const ledger = await rows<{ attempts: number; failed_attempts: number; on_time: boolean }>(
      db,
      sql`select attempts, failed_attempts, finished_at >= due_at as on_time from notify_timers`,
    );
    expect(ledger.filter((r) => r.attempts !== 1 || r.failed_attempts !== 0 || !r.on_time)).toEqual([]);
    const text = await scrape(daemon);
    expect(deliveryAttempts(text, "notify", "direct")).toBe(WAVE);
    expect(deliveryAttempts(text, "notify", "fetched")).toBe(0);
  }, 40_000);
});
