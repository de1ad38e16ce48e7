/**
 * pg-boss on a server through postgres.js, the driver the ledger uses, instead of pg-boss's own
 * node-postgres pool: node-postgres takes one host, while postgres.js takes a multi-host URL with
 * `target_session_attrs=read-write` and, after a failover, reconnects to whichever host is the
 * primary now (client.ts's sessionAttrs). The daemon's queues then follow the primary with the
 * ledger.
 */
import type { Db as BossDb } from "pg-boss";
import type { Sql } from "postgres";
import { reconnectBackoffSeconds, sessionAttrs } from "./client.ts";
import { lossSafeClient } from "./connection-loss.ts";

// json and jsonb parameters: pg-boss hands them over already serialized, as node-postgres expects.
// postgres.js's own serializer would JSON.stringify the string again, storing a JSON string.
const JSON_OIDS = [114, 3802];
const jsonPassThrough = {
  to: 3802,
  from: JSON_OIDS,
  serialize: (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value)),
  parse: (text: string) => JSON.parse(text) as unknown,
};

/** node-postgres's conversion of a parameter: an object (not a date, buffer or array) as JSON text. */
const asNodePostgres = (value: unknown): unknown =>
  value !== null &&
  typeof value === "object" &&
  !(value instanceof Date) &&
  !(value instanceof Uint8Array) &&
  !Array.isArray(value)
    ? JSON.stringify(value)
    : value;

export interface BossConnection {
  db: BossDb;
  /** Ends the connections (after pg-boss has stopped). */
  close(): Promise<void>;
}

/** A pool of `max` connections to `url` for pg-boss alone, named `application_name`. */
export async function bossConnection(url: string, max: number, applicationName: string): Promise<BossConnection> {
  const { default: postgres } = await import("postgres");
  const client = postgres(url, {
    max,
    onnotice: () => {},
    connection: { application_name: applicationName },
    backoff: reconnectBackoffSeconds,
    types: { jsonPassThrough },
    ...sessionAttrs(url),
  });
  return { db: bossDb(lossSafeClient(client)), close: () => client.end({ timeout: 2 }) };
}

const OPENS_TRANSACTION = /\bbegin\b/i;

function bossDb(client: Sql<{ jsonPassThrough: unknown }>): BossDb {
  return {
    async executeSql(text, values) {
      if (values?.length) {
        const result = await client.unsafe(text, values.map(asNodePostgres) as never[]);
        return { rows: [...result] };
      }
      // Without parameters a text may hold several statements (pg-boss's locked() blocks, its
      // migrations, a BEGIN … COMMIT), which only the simple protocol takes. One that opens a
      // transaction runs inside one of postgres.js's own, so that a failure inside it is rolled
      // back on its connection (as node-postgres's pool does by discarding the connection) rather
      // than leaving the next statement an aborted transaction; its BEGIN and COMMIT then only draw
      // warnings. Not on a reserved connection: postgres.js 3.4.9 can leave a connection that was
      // reconnected for a reservation waiting forever, and a reservation whose connection was lost
      // must never be released or used again (connection-loss.ts). Any other text is one implicit
      // transaction, rolled back whole by the server when a statement fails.
      const result = (OPENS_TRANSACTION.test(text)
        ? await client.begin((tx) => tx.unsafe(text).simple())
        : await client.unsafe(text).simple()) as unknown as readonly unknown[];
      // One result per statement when there were several, each an array of rows.
      const rows = result.length > 0 && result.every((r) => Array.isArray(r)) ? result.flat() : [...result];
      return { rows };
    },
    // postgres.js keeps the LISTEN on a connection of its own and, when it drops, subscribes again
    // (on the primary of the moment) and calls onReconnect, so pg-boss fetches what it missed.
    async listen(channel, onNotification, onReconnect) {
      const subscription = await client.listen(channel, onNotification, onReconnect);
      return { close: () => subscription.unlisten() };
    },
  };
}
