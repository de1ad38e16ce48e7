import { and, asc, isNull, lt, or, eq, isNotNull } from "drizzle-orm";
import type { Executor } from "../db/client.ts";
import { instances, type InstanceRow } from "../db/schema/index.ts";

/** The instances' SQL: one row per daemon, written by its heartbeat. */

/** This instance's heartbeat: the row written anew (a restart under the same name starts it again). */
export async function writeBeat(db: Executor, row: Omit<InstanceRow, "stoppedAt">): Promise<void> {
  const { name, ...rest } = row;
  await db
    .insert(instances)
    .values({ name, ...rest, stoppedAt: null })
    .onConflictDoUpdate({ target: instances.name, set: { ...rest, stoppedAt: null } });
}

/** A clean stop says so: the instance is then not reported as vanished. */
export async function markStopped(db: Executor, name: string, at: Date): Promise<void> {
  await db.update(instances).set({ stoppedAt: at, heartbeatAt: at }).where(eq(instances.name, name));
}

export function listInstances(db: Executor): Promise<InstanceRow[]> {
  return db.select().from(instances).orderBy(asc(instances.name));
}

/** Instances still running by their row whose last heartbeat is before `before`. */
export function vanishedInstances(db: Executor, before: Date): Promise<InstanceRow[]> {
  return db
    .select()
    .from(instances)
    .where(and(isNull(instances.stoppedAt), lt(instances.heartbeatAt, before)))
    .orderBy(asc(instances.heartbeatAt));
}

/** Retention: the rows of instances stopped or silent since before `before`. */
export async function pruneInstances(db: Executor, before: Date): Promise<number> {
  const gone = await db
    .delete(instances)
    .where(or(lt(instances.heartbeatAt, before), and(isNotNull(instances.stoppedAt), lt(instances.stoppedAt, before))))
    .returning({ name: instances.name });
  return gone.length;
}
