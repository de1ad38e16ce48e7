import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { rows } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";

const t = daemonPerTest();

const DAY = 86_400_000;
const ago = (days: number) => new Date(Date.now() - days * DAY).toISOString();

const withRetention = (lines: string) => t.start({ toml: `[retention]\nprune_interval = "1h"\n${lines}\n` });

const exec = (daemon: Daemon, query: ReturnType<typeof sql>) => daemon.services.database.db.execute(query);
const column = async (daemon: Daemon, query: ReturnType<typeof sql>) =>
  (await rows<{ v: string }>(daemon.services.database.db, query)).map((r) => r.v);

async function session(daemon: Daemon, id: string): Promise<void> {
  await exec(daemon, sql`insert into sessions (id, agent_id) values (${id}, 'a1')`);
}

describe(`retention: timers, todos, clears, events, decisions (${backendName})`, () => {
  it("removes closed notify timers past `timers`, never a Pending, Claimed or Delivering one", async () => {
    const daemon = await withRetention(`timers = "1d"`);
    await session(daemon, "s1");
    for (const [status, days] of [
      ["Delivered", 5],
      ["Dropped", 5],
      ["Delivered", 0],
      ["Pending", 5],
      ["Claimed", 5],
      ["Delivering", 5],
    ] as const) {
      await exec(
        daemon,
        sql`insert into notify_timers (session_id, agent_id, status, requested_message, requested_delay_seconds, due_at, created_at, finished_at)
          values ('s1', 'a1', ${status}, ${`${status} ${days}`}, 1, ${ago(days)}::timestamptz, ${ago(days)}::timestamptz,
                  ${status.startsWith("D") ? ago(days) : null}::timestamptz)`,
      );
    }
    const result = await daemon.services.pruner.runPass();
    expect(result.pruned.timers).toBe(2);
    expect(await column(daemon, sql`select requested_message as v from notify_timers order by id`)).toEqual([
      "Delivered 0",
      "Pending 5",
      "Claimed 5",
      "Delivering 5",
    ]);
  });

  it("removes closed todos past `todos` and a batch once none of its todos is left; an open todo stays", async () => {
    const daemon = await withRetention(`todos = "1d"`);
    await session(daemon, "s1");
    const batch = async (label: string) =>
      (
        await column(
          daemon,
          sql`insert into todo_batches (session_id, status, requested_texts, added_count, created_at)
            values ('s1', 'Added', array[${label}], 1, ${ago(9)}::timestamptz) returning id::text as v`,
        )
      )[0]!;
    const closed = await batch("closed");
    const open = await batch("open");
    await exec(
      daemon,
      sql`insert into todos (session_id, batch_id, text, status, created_at, closed_at) values
        ('s1', ${closed}::bigint, 'done long ago', 'done', ${ago(9)}::timestamptz, ${ago(8)}::timestamptz),
        ('s1', ${open}::bigint, 'still open', 'open', ${ago(9)}::timestamptz, null),
        ('s1', ${open}::bigint, 'done today', 'done', ${ago(9)}::timestamptz, ${ago(0)}::timestamptz)`,
    );
    const result = await daemon.services.pruner.runPass();
    expect(result.pruned.todos).toBe(2); // one todo, one batch
    expect(await column(daemon, sql`select text as v from todos order by id`)).toEqual(["still open", "done today"]);
    expect(await column(daemon, sql`select id::text as v from todo_batches`)).toEqual([open]);
  });

  it("removes old events, then the completed clears no event names any more; an unfinished clear stays", async () => {
    const daemon = await withRetention(`events = "2d"\nclears = "1d"`);
    await session(daemon, "s1");
    await session(daemon, "s2");
    // An unfinished clear holds another instance's live lease, or the daemon's own sweeper would resume and
    // finish it (a clear owned under the daemon's own name, "test", counts as its own from an earlier life).
    const clear = async (
      sessionId: string,
      status: string,
      days: number,
      lease = ago(status === "Completed" ? days : -1),
    ) =>
      (
        await column(
          daemon,
          sql`insert into session_clears (session_id, agent_id, status, upto_message_id, upto_subagent_id, upto_peer_thread_id, owned_by, lease_until, requested_at, completed_at)
            values (${sessionId}, 'a1', ${status}, 0, 0, 0, 'another-instance', ${lease}::timestamptz, ${ago(days)}::timestamptz,
                    ${status === "Completed" ? ago(days) : null}::timestamptz) returning id::text as v`,
        )
      )[0]!;
    const oldClear = await clear("s1", "Completed", 5);
    const namedClear = await clear("s1", "Completed", 1.5);
    await clear("s2", "Requested", 5);
    await exec(
      daemon,
      sql`insert into session_events (kind, session_id, clear_id, payload, created_at) values
        ('sessionCleared', 's1', ${oldClear}::bigint, '{}', ${ago(5)}::timestamptz),
        ('sessionCleared', 's1', ${namedClear}::bigint, '{}', ${ago(1.5)}::timestamptz)`,
    );
    const result = await daemon.services.pruner.runPass();
    expect(result.pruned).toMatchObject({ events: 1, clears: 1 });
    // The 1.5-day-old clear is past `clears` but its event (within `events`) still names it.
    expect(await column(daemon, sql`select status as v from session_clears order by id`)).toEqual([
      "Completed",
      "Requested",
    ]);
  });

  it("answers 410 with the oldest cursor still valid for an events cursor below what retention removed", async () => {
    const daemon = await withRetention(`events = "1d"`);
    const ids = await column(
      daemon,
      sql`insert into session_events (kind, session_id, payload, created_at) values
        ('sessionCleared', 's1', '{"n":1}', ${ago(3)}::timestamptz),
        ('sessionCleared', 's1', '{"n":2}', ${ago(2)}::timestamptz),
        ('sessionCleared', 's1', '{"n":3}', ${ago(0)}::timestamptz) returning id::text as v`,
    );
    expect((await daemon.services.pruner.runPass()).pruned.events).toBe(2);
    const { api } = daemon.services;
    const gone = await api.inject({ method: "GET", url: `/v1/events?after=${ids[0]}` });
    expect(gone.statusCode).toBe(410);
    expect(gone.json()).toEqual({
      error: {
        code: "GONE",
        oldestCursor: ids[1],
        message: `events after cursor ${ids[0]} were removed by retention; the oldest cursor still valid is ${ids[1]}`,
      },
    });
    const resumed = await api.inject({ method: "GET", url: `/v1/events?after=${ids[1]}` });
    expect(resumed.json()).toMatchObject({ events: [{ id: ids[2] }], next: ids[2] });
    // A reader without a cursor starts at the oldest event kept.
    const fresh = await api.inject({ method: "GET", url: "/v1/events" });
    expect(fresh.json()).toMatchObject({ events: [{ id: ids[2] }] });
  });

  it("trims the decision log past `decisions` and keeps everything when a kind is set to 0", async () => {
    const daemon = await withRetention(`decisions = "1d"\ntimers = "0"`);
    await session(daemon, "s1");
    await exec(
      daemon,
      sql`insert into hook_decisions (plugin, hook, at, duration_ms, outcome, instance) values
        ('p', 'cronJobFiring', ${ago(3)}::timestamptz, 1, 'passed', 'test'),
        ('p', 'cronJobFiring', ${ago(0)}::timestamptz, 1, 'passed', 'test')`,
    );
    await exec(
      daemon,
      sql`insert into notify_timers (session_id, agent_id, status, requested_message, requested_delay_seconds, created_at, finished_at)
        values ('s1', 'a1', 'Delivered', 'ancient', 1, ${ago(900)}::timestamptz, ${ago(900)}::timestamptz)`,
    );
    const result = await daemon.services.pruner.runPass();
    expect(result.pruned).toMatchObject({ decisions: 1, timers: 0 });
    expect(await column(daemon, sql`select count(*)::text as v from notify_timers`)).toEqual(["1"]);
  });
});
