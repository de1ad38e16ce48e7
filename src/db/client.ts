import { mkdirSync } from "node:fs";
import type { PGlite } from "@electric-sql/pglite";
import { sql, type SQL } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { MissiondError } from "../errors.ts";
import { lossSafeClient } from "./connection-loss.ts";
import { preparingClient, StatementChoice } from "./prepared.ts";
import * as schema from "./schema/index.ts";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
/** Anything a query can run on: the database or an open transaction. */
export type Executor = Db | Tx;

export interface Database {
  readonly kind: "pglite" | "postgres";
  readonly db: Db;
  /** Set on the embedded backend: pg-boss and LISTEN share this one instance. */
  readonly pglite: PGlite | null;
  readonly url: string | null;
  /** Subscribes to a NOTIFY channel; resolves to an unsubscribe function. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface OpenOptions {
  databaseUrl: string | null;
  /** Data directory of the embedded database; `null` keeps it in memory (tests). */
  dataDir: string | null;
  /** An already open PGlite to share (tests run several daemons on one embedded database). */
  pglite?: PGlite;
  poolSize?: number;
  /** Sees the text of every statement sent (tests count the distinct texts a workload prepares). */
  onQuery?: (text: string) => void;
}

const queryLogger = (onQuery: OpenOptions["onQuery"]) => (onQuery ? { logQuery: onQuery } : undefined);

/** Rows of a raw query, whatever the driver's result shape (postgres.js: array; PGlite: {rows}). */
export async function rows<T>(db: Executor, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown;
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/** How long readiness waits for the database's answer. */
export const PING_TIMEOUT_MS = 2_000;

/**
 * `work`, or a DATABASE error once it has not settled within `timeoutMs`. While a multi-host URL's
 * primary is gone postgres.js holds a statement and tries the hosts in turn until one is the
 * primary, so a probe without a bound (readiness) would hang instead of saying "not ready".
 */
export async function answerWithin<T>(work: Promise<T>, timeoutMs = PING_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new MissiondError("DATABASE", `the database did not answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves once the database answers a trivial query (readiness); rejects when it cannot, or not in time. */
export async function ping(db: Executor, timeoutMs = PING_TIMEOUT_MS): Promise<void> {
  await answerWithin(db.execute(sql`select 1`), timeoutMs);
}

// Each backend's driver is imported only when that backend is opened: PGlite alone is half a
// megabyte of JavaScript (and its WebAssembly) that a daemon on Postgres never runs.
export async function openDatabase(options: OpenOptions): Promise<Database> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options.poolSize ?? 10, options.onQuery);
  return openPglite(options);
}

/**
 * Seconds a pooled connection waits before reconnecting after a failed attempt. postgres.js's
 * default grows with the failures the whole pool has seen (shared, reset only by a success) to
 * 20 s, so after a restart of a few seconds queries sat for up to 20 s on connections waiting out
 * their delay while the database was back: slots and timers fired that late. Capped at 1 s
 * (jittered): a pool of 10 makes at most about 10 attempts a second while the database is gone.
 */
export function reconnectBackoffSeconds(retries: number): number {
  return Math.min(0.05 * 2 ** retries, 1) * (0.5 + Math.random() / 2);
}

/**
 * The server a URL's hosts are tried for. postgres.js (3.4) tells `target_session_attrs=read-write`
 * by `default_transaction_read_only` alone, which a hot standby reports off: the pool would settle
 * on the standby while the primary is down, and every write fail there ("read-only transaction")
 * until a restart, even after the standby's promotion. A server in recovery never takes writes, so
 * read-write is asked as `primary` (not in recovery), as libpq tells it.
 */
export function sessionAttrs(url: string): { target_session_attrs?: "primary" } {
  return /[?&]target_session_attrs=read-write(&|$)/.test(url) ? { target_session_attrs: "primary" } : {};
}

async function openPostgres(url: string, max: number, onQuery: OpenOptions["onQuery"]): Promise<Database> {
  const [{ default: postgres }, { drizzle: drizzlePostgres }] = await Promise.all([
    import("postgres"),
    import("drizzle-orm/postgres-js"),
  ]);
  const client = postgres(url, {
    max,
    onnotice: () => {},
    connection: { application_name: "missiond" },
    backoff: reconnectBackoffSeconds,
    ...sessionAttrs(url),
  });
  try {
    await client`select 1`;
  } catch (err) {
    await client.end({ timeout: 1 }).catch(() => {});
    throw new MissiondError("DATABASE", `cannot connect to the database: ${(err as Error).message}`, { cause: err });
  }
  // Statements used again are prepared on their connection: one round trip each instead of two.
  // Transactions stop at the loss of their connection, which postgres.js would otherwise write
  // to after its socket is gone, ending the process (connection-loss.ts).
  const db = drizzlePostgres(preparingClient(lossSafeClient(client), new StatementChoice()), {
    schema,
    logger: queryLogger(onQuery),
  }) as unknown as Db;
  return {
    kind: "postgres",
    db,
    pglite: null,
    url,
    async listen(channel, onPayload) {
      const subscription = await client.listen(channel, onPayload);
      return async () => subscription.unlisten();
    },
    async close() {
      await client.end({ timeout: 5 });
    },
  };
}

// The embedded server's buffer cache lives in its WebAssembly memory, all of it resident and never
// given back: Postgres's 128 MB default was over half of an idle daemon's RSS. 32 MB was Postgres's
// own default until 9.3; pages beyond it are read again, through the OS's file cache.
const EMBEDDED_SHARED_BUFFERS = "32MB";
// The same holds for what VACUUM allocates: the pruner's vacuums grew a soaking daemon's memory by
// tens of megabytes at the 64 MB default, kept for good. 16 MB holds 2.8 million dead rows' ids,
// far more than a pruning pass leaves between two vacuums.
const EMBEDDED_MAINTENANCE_WORK_MEM = "16MB";
/** The embedded server's settings beyond PGlite's defaults (the benchmarks open theirs with these). */
export const EMBEDDED_SETTINGS: readonly string[] = Object.freeze([
  ...["-c", `shared_buffers=${EMBEDDED_SHARED_BUFFERS}`],
  ...["-c", `maintenance_work_mem=${EMBEDDED_MAINTENANCE_WORK_MEM}`],
]);

async function openPglite(options: OpenOptions): Promise<Database> {
  const [{ PGlite }, { drizzle: drizzlePglite }] = await Promise.all([
    import("@electric-sql/pglite"),
    import("drizzle-orm/pglite"),
  ]);
  const owned = !options.pglite;
  let pglite = options.pglite;
  if (!pglite) {
    if (options.dataDir) mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    try {
      pglite = await PGlite.create(options.dataDir ?? undefined, {
        startParams: [...PGlite.defaultStartParams, ...EMBEDDED_SETTINGS],
      });
    } catch (err) {
      throw new MissiondError(
        "DATABASE",
        `cannot open the embedded database in ${options.dataDir}: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
  }
  const instance = pglite;
  const db = drizzlePglite(instance, { schema, logger: queryLogger(options.onQuery) }) as unknown as Db;
  return {
    kind: "pglite",
    db,
    pglite: instance,
    url: null,
    async listen(channel, onPayload) {
      const unlisten = await instance.listen(channel, onPayload);
      return async () => unlisten();
    },
    async close() {
      if (owned && !instance.closed) await instance.close();
    },
  };
}
