import type { Executor } from "../db/client.ts";
import { pgNotify } from "./announce-queries.ts";

/**
 * NOTIFY `channel` to every instance listening on the database (within a transaction, delivered
 * when it commits): the one announcement every change goes through, so other instances re-arm.
 */
export function announce(db: Executor, channel: string, payload: string): Promise<void> {
  return pgNotify(db, channel, payload);
}
