/**
 * The statements a busy daemon prepares: postgres.js keeps every statement text it prepared on
 * every pooled connection for the connection's life, so a text that grows with its batch (an IN
 * list, a VALUES list, a multi-row insert) is memory that grows with every new batch size. Every
 * batched statement sends its batch as one parameter: one text per statement, whatever the sizes.
 */
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { insertRuns } from "../../src/cron/queries.ts";
import { rows } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { examplePlugin } from "../helpers/plugins.ts";
import { waitSucceeded } from "../helpers/succeeded-runs.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();

/**
 * A statement's shape: its text with each parameter list (`$1, $2, …`) read as one parameter and each
 * list of rows (`($1, default, $2::int), ($3, default, $4::int)`) as one row.
 */
const VALUE = String.raw`(?:\$(?:::\w+)?|default)`;
const ROW = String.raw`\(${VALUE}(?:, ${VALUE})*\)`;
const shape = (text: string) =>
  text
    .replace(/\$\d+/g, "$")
    .replace(new RegExp(`${ROW}(?:, ${ROW})+`, "g"), "(row)")
    .replace(/\$(?:\s*,\s*\$)+/g, "$");

/** A job that fires every second, and its first three runs closed. */
async function threeRunsOfAJobEverySecond(daemon: Daemon): Promise<void> {
  await daemon.services.cron.add({ name: "a", agentId: "a1", cron: "* * * * * *", prompt: "p" });
  await waitSucceeded(daemon.services.database.db, 3);
}

describe(`statement texts under a varied load (${backendName})`, () => {
  it("jobs firing in batches of every size, a plugin's decisions and notes in waves prepare one text per statement", async () => {
    const texts = new Set<string>();
    const daemon = await t.start({ pluginDirs: [examplePlugin("cron-sentinel")], onQuery: (text) => texts.add(text) });
    const db = daemon.services.database.db;
    // 40 per-second jobs, each at its own offset within the second: claims, starts, closes and
    // decision-log flushes come in batches of many sizes.
    for (let i = 0; i < 40; i++)
      await daemon.services.cron.add({
        name: `j${i}`,
        agentId: "a1",
        cron: "* * * * * *",
        jitter: "1s",
        prompt: `p${i}`,
      });
    await daemon.services.sessions.create({ id: "s1", agentId: "a1" });
    const due = Date.now() + 1_500;
    let wave = 0;
    for (const size of [1, 3, 7, 20]) {
      await db.execute(sql`
        insert into notify_timers (session_id, agent_id, status, requested_message, requested_delay_seconds, message, delay_seconds, due_at, created_at)
        select 's1', 'a1', 'Pending', 'note ' || g, 1, 'note ' || g, 1, ${new Date(due + 700 * wave++).toISOString()}::timestamptz, now()
        from generate_series(1, ${size}) as g`);
    }
    daemon.services.scheduler.poke();
    await waitFor(
      async () => {
        const [found] = await rows<{ notes: number; runs: number }>(
          db,
          sql`select (select count(*) from notify_timers where status = 'Delivered')::int as notes,
                     (select count(*) from cron_job_runs where status = 'Succeeded')::int as runs`,
        );
        return found!.notes === 31 && found!.runs >= 200;
      },
      "every note delivered and 200 runs succeeded",
      30_000,
    );

    const byShape = new Map<string, Set<string>>();
    for (const text of texts) {
      const group = byShape.get(shape(text)) ?? new Set();
      group.add(text);
      byShape.set(shape(text), group);
    }
    const grown = [...byShape]
      .filter(([, group]) => group.size > 1)
      .map(([s, group]) => `${group.size}× ${s.slice(0, 120)}`);
    expect(grown).toEqual([]);
    // The shapes that matter were exercised: the claim, the start, the close, the decision log.
    const all = [...texts].join("\n");
    for (const statement of [
      'insert into "cron_job_runs"',
      "update cron_job_runs as",
      'insert into "hook_decisions"',
      "update notify_timers as t set status = 'Delivering'",
    ])
      expect(all).toContain(statement);
    // The direct lane's pg-boss jobs, inserted active in hand-offs of many sizes: one text, not one
    // per size (a list of typed parameters, `$1::uuid, $2::uuid`, is a shape of its own for each
    // length, which the check above cannot see).
    expect([...texts].filter((text) => text.startsWith("insert into pgboss.job (id, name, data, state"))).toHaveLength(
      1,
    );
  }, 60_000);

  it("runs of jobs that buffer no slot end without a search for one, which has no slot to bound it", async () => {
    const texts: string[] = [];
    const daemon = await t.start({ onQuery: (text) => texts.push(text) });
    await threeRunsOfAJobEverySecond(daemon);
    // Each run's end asked (the job's policy read); none looked for a buffered slot.
    expect(texts.filter((text) => text.includes('"overlap_policy" = $')).length).toBeGreaterThan(0);
    expect(texts.filter((text) => text.startsWith('update "cron_job_runs" set "deferred_until"'))).toEqual([]);
  }, 30_000);

  it("runs handed off in their claim are inserted Running, claimed and started, with no update to Running after", async () => {
    const texts: string[] = [];
    const daemon = await t.start({ onQuery: (text) => texts.push(text) });
    await threeRunsOfAJobEverySecond(daemon);
    const done = await rows<{ attempts: number; claimed: boolean; started: boolean; session: string | null }>(
      daemon.services.database.db,
      sql`select attempts, claimed_by is not null and claimed_at is not null as claimed,
            started_at is not null as started, session_id as session
          from cron_job_runs where status = 'Succeeded'`,
    );
    for (const run of done) expect(run).toMatchObject({ attempts: 1, claimed: true, started: true });
    expect(done.every((run) => run.session?.startsWith("cron-"))).toBe(true);
    expect(
      texts.some((text) => text.includes('insert into "cron_job_runs"') && text.includes("overriding system value")),
    ).toBe(true);
    expect(texts.filter((text) => text.includes("set status = 'Running'"))).toEqual([]);
  }, 30_000);

  it("a claim's insert fills each column's default, and answers rows typed as drizzle's select", async () => {
    const daemon = await t.start();
    const job = await daemon.services.cron.add({ name: "d", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    const slot = new Date("2026-12-02T10:00:00.123Z");
    const [run] = await insertRuns(daemon.services.database.db, [
      {
        cronJobId: BigInt(job.id),
        scheduledFor: slot,
        status: "Claimed",
        claimedBy: "me",
        reason: "nul\u0000 and \ud800 lone",
      },
    ]);
    expect(typeof run!.id).toBe("bigint");
    expect(run!.scheduledFor).toEqual(slot);
    expect(run!.claimedAt).toBeInstanceOf(Date);
    expect(Math.abs(run!.claimedAt.getTime() - Date.now())).toBeLessThan(60_000);
    expect(run).toMatchObject({
      trigger: "schedule",
      backfilled: false,
      attempts: 0,
      failedAttempts: 0,
      startedAt: null,
    });
    // Text no Postgres column can hold is made storable, as a text parameter's encoding made it.
    expect(run!.reason).toBe("nul and \ufffd lone");
    // The same slot again: the conflict inserts nothing.
    expect(
      await insertRuns(daemon.services.database.db, [
        { cronJobId: BigInt(job.id), scheduledFor: slot, status: "Claimed", claimedBy: "other" },
      ]),
    ).toEqual([]);
  });
});
