/**
 * Everything that reaches past pg-boss's API into its own schema (`pgboss.*`): the statements and
 * the versions of pg-boss they were written for. pg-boss may change its tables in any release, so
 * a daemon refuses to start on a pg-boss this module was not checked against.
 */
import { sql } from "drizzle-orm";
import { fromDrizzle, type DrizzleTransactionLike } from "pg-boss";
// A static import: the bundle carries the package.json of the pg-boss it bundles.
import bossPackage from "pg-boss/package.json" with { type: "json" };
import { MissiondError } from "../errors.ts";
import { recordset } from "./batch-params.ts";
import type { Tx } from "./client.ts";

/**
 * The pg-boss releases these statements were written for: a semver range as package.json's
 * dependency says it (major 12, from 12.38.0) and the schema version those releases install (the
 * `pgboss.schema` of their package.json, the `version` row of `pgboss.version`).
 */
export const BOSS_SUPPORTED = { range: "^12.38.0", major: 12, minimum: [12, 38, 0], schema: 46 } as const;

export interface BossRelease {
  /** pg-boss's package version, e.g. "12.38.0". */
  version: string;
  /** The schema version it installs and migrates to. */
  schema: number;
}

/** The pg-boss this daemon runs with, as its package.json says. */
export function installedBoss(): BossRelease {
  const read = bossPackage as { version: string; pgboss?: { schema?: number } };
  return { version: read.version, schema: read.pgboss?.schema ?? Number.NaN };
}

const parts = (version: string): number[] | null => {
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  return match ? match.slice(1, 4).map(Number) : null;
};

/** Throws, naming both, when `installed` is not a pg-boss these statements were written for. */
export function checkBossRelease(installed: BossRelease): void {
  const [major, minor, patch] = parts(installed.version) ?? [];
  const [, minMinor, minPatch] = BOSS_SUPPORTED.minimum;
  const inRange =
    major === BOSS_SUPPORTED.major &&
    minor !== undefined &&
    patch !== undefined &&
    (minor > minMinor || (minor === minMinor && patch >= minPatch));
  if (inRange && installed.schema === BOSS_SUPPORTED.schema) return;
  throw new MissiondError(
    "INTERNAL",
    `pg-boss ${installed.version} (schema ${installed.schema}) is installed, but missiond supports pg-boss ` +
      `${BOSS_SUPPORTED.range} with schema ${BOSS_SUPPORTED.schema}: it writes pg-boss's own tables, ` +
      `whose shape other releases may change. Install a supported pg-boss.`,
  );
}

/** pg-boss's own statements (its insert) run on `tx`, so its jobs commit with the hand-off. */
export const bossOnTransaction = (tx: Tx) => fromDrizzle(tx as unknown as DrizzleTransactionLike, sql);

/**
 * The columns of a job pg-boss copies from its queue's settings at insert, and their values from the
 * queue aliased `q` (its plans.js insert): the defaults below where a setting is unset, keep_until
 * counted from `now`.
 */
const SETTINGS_COLUMNS = sql.raw(
  "expire_seconds, deletion_seconds, keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, heartbeat_seconds",
);
const settingsOf = (alias: string) => {
  const q = sql.raw(alias);
  return sql`coalesce(${q}.expire_seconds, ${BOSS_QUEUE_DEFAULTS.expireSeconds}),
    coalesce(${q}.deletion_seconds, ${BOSS_QUEUE_DEFAULTS.deletionSeconds}),
    now + coalesce(${q}.retention_seconds, ${BOSS_QUEUE_DEFAULTS.retentionSeconds}) * interval '1s',
    coalesce(${q}.retry_limit, ${BOSS_QUEUE_DEFAULTS.retryLimit}), coalesce(${q}.retry_delay, 0),
    coalesce(${q}.retry_backoff, false), ${q}.retry_delay_max, ${q}.policy, ${q}.heartbeat_seconds`;
};

/**
 * Inserts jobs of `queue` already active for this instance, as pg-boss's own fetch leaves them
 * (started and heartbeat now, first attempt), in the hand-off's transaction, with the queue's
 * settings as pg-boss's insert would copy them. One statement and one row version per job: pg-boss's
 * insert followed by an update to active wrote each job twice, every index of the job table
 * included, and its waiting-jobs index once more. The jobs as one JSON parameter (batch-params.ts).
 */
export async function insertActiveJobs(
  tx: Tx,
  queue: string,
  jobs: readonly { id: string; data: object }[],
): Promise<void> {
  await tx.execute(
    sql`insert into pgboss.job (id, name, data, state, start_after, created_on, started_on, heartbeat_on, dead_letter, ${SETTINGS_COLUMNS})
        select v.id, q.name, v.data, 'active', now, now, now, now, q.dead_letter, ${settingsOf("q")}
        from ${recordset(jobs, "id uuid, data jsonb")}
        join pgboss.queue q on q.name = ${queue}
        cross join (select pgboss.job_now() as now) as t`,
  );
}

/**
 * A delivery the direct lane held without a pg-boss job, handed to pg-boss (a retry, a hand-back at
 * shutdown, a takeover): `tries` attempts came before it.
 */
export interface HandedJob {
  id: string;
  data: object;
  tries: number;
  /** After a failed attempt: start after the queue's retry delay (with its backoff), as pg-boss's fail would. */
  backoff: boolean;
}

/**
 * Inserts jobs of `queue` as pg-boss's fail leaves a job it will retry, in the caller's transaction:
 * one with `tries` attempts behind it is in state `retry` with started_on set and retry_count
 * `tries - 1`, so pg-boss's fetch counts it as retry `tries` (the worker's retryCount) and its retry
 * limit and dead letter apply from there; one with none is a new job. With `backoff`, its start waits
 * the queue's retry delay as pg-boss computes it (plans.js failJobsBody).
 */
export async function insertHandedJobs(tx: Tx, queue: string, jobs: readonly HandedJob[]): Promise<void> {
  if (jobs.length === 0) return;
  const values = jobs.map((j) => ({ id: j.id, data: j.data, tries: j.tries, backoff: j.backoff }));
  const retried = sql`v.tries > 0`;
  const delay = sql`case when not v.backoff then 0
          when not coalesce(q.retry_backoff, false) then coalesce(q.retry_delay, 0)
          else least(coalesce(q.retry_delay_max, 2147483647), greatest(coalesce(q.retry_delay, 0), 1)
            * (2 ^ least(16, v.tries) / 2 + 2 ^ least(16, v.tries) / 2 * random())) end`;
  await tx.execute(
    sql`insert into pgboss.job (id, name, data, state, retry_count, start_after, created_on, started_on, dead_letter, ${SETTINGS_COLUMNS})
        select v.id, q.name, v.data, case when ${retried} then 'retry' else 'created' end::pgboss.job_state,
          greatest(v.tries - 1, 0), now + ${delay} * interval '1s', now, case when ${retried} then now end,
          q.dead_letter, ${settingsOf("q")}
        from ${recordset(values, "id uuid, data jsonb, tries int, backoff boolean")}
        join pgboss.queue q on q.name = ${queue}
        cross join (select pgboss.job_now() as now) as t`,
  );
}

/**
 * A delivery whose last try failed on the direct lane (no pg-boss job to fail): a new job in the
 * dead-letter queue of `queue`, with that queue's settings, as pg-boss's fail would put it there.
 */
export async function insertDeadLetters(tx: Tx, queue: string, jobs: readonly { data: object }[]): Promise<void> {
  if (jobs.length === 0) return;
  await tx.execute(
    sql`insert into pgboss.job (id, name, data, state, start_after, created_on, ${SETTINGS_COLUMNS})
        select gen_random_uuid(), d.name, v.data, 'created', now, now, ${settingsOf("d")}
        from ${recordset(jobs, "data jsonb")}
        join pgboss.queue q on q.name = ${queue}
        join pgboss.queue d on d.name = q.dead_letter
        cross join (select pgboss.job_now() as now) as t`,
  );
}

/** pg-boss's own defaults for a queue setting left unset (its plans.js QUEUE_DEFAULTS). */
const BOSS_QUEUE_DEFAULTS = {
  expireSeconds: 15 * 60,
  retentionSeconds: 14 * 86_400,
  deletionSeconds: 7 * 86_400,
  retryLimit: 2,
} as const;
