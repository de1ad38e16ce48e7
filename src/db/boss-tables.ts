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
import { anyOf } from "./batch-params.ts";
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
 * Makes these just-inserted jobs of `queue` active for this instance, as pg-boss's own fetch would
 * (started and heartbeat now), in the hand-off's transaction. The ids as one array parameter: as
 * an IN list, each size of hand-off was a statement text of its own, prepared anew
 * (batch-params.ts), and a burst's was 10,000 parameters long.
 */
export async function activateJobs(tx: Tx, queue: string, ids: readonly string[]): Promise<void> {
  await tx.execute(
    sql`update pgboss.job set state = 'active', started_on = pgboss.job_now(), heartbeat_on = pgboss.job_now()
        where name = ${queue} and state = 'created' and ${anyOf(sql`id`, ids, "uuid")}`,
  );
}
