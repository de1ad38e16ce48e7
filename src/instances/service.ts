import type { Executor } from "../db/client.ts";
import { instanceAnswer, type InstanceView } from "./answers.ts";
import { VANISHED_AFTER_MS } from "./heartbeat.ts";
import { listInstances, vanishedInstances } from "./queries.ts";

/** Every instance on the database, each with its state at `now`. */
export async function instanceList(db: Executor, now: number): Promise<InstanceView[]> {
  return (await listInstances(db)).map((row) => instanceAnswer(row, now - VANISHED_AFTER_MS));
}

/** The doctor's finding: instances that stopped heart-beating without a clean stop. */
export async function vanished(
  db: Executor,
  now: number,
): Promise<{ name: string; host: string; lastHeartbeatAt: string }[]> {
  return (await vanishedInstances(db, new Date(now - VANISHED_AFTER_MS))).map((r) => ({
    name: r.name,
    host: r.host,
    lastHeartbeatAt: r.heartbeatAt.toISOString(),
  }));
}
