import { randomBytes } from "node:crypto";
import { and, asc, eq, lte } from "drizzle-orm";
import type { Executor } from "../db/client.ts";
import { cronJobRuns, daemonSecrets, type CronJobRunRow } from "../db/schema/index.ts";

/**
 * An approval: the waiting run becomes Claimed again (claimed now, by this instance, so recovery
 * does not take it for a lost claim) with who approved it, ready for its hand-off. Conditional on
 * AwaitingApproval: one decision per run, whoever decides second gets null.
 */
export async function approveRun(
  db: Executor,
  id: bigint,
  actor: string,
  at: Date,
  instance: string,
): Promise<CronJobRunRow | null> {
  const [row] = await db
    .update(cronJobRuns)
    .set({ status: "Claimed", approvedBy: actor, approvedAt: at, claimedAt: at, claimedBy: instance })
    .where(and(eq(cronJobRuns.id, id), eq(cronJobRuns.status, "AwaitingApproval")))
    .returning();
  return row ?? null;
}

/** A rejection or a window that ended: the waiting run is Cancelled with the reason. */
export async function cancelWaiting(db: Executor, id: bigint, reason: string, at: Date): Promise<CronJobRunRow | null> {
  const [row] = await db
    .update(cronJobRuns)
    .set({ status: "Cancelled", reason, finishedAt: at })
    .where(and(eq(cronJobRuns.id, id), eq(cronJobRuns.status, "AwaitingApproval")))
    .returning();
  return row ?? null;
}

/** Waiting runs whose window ended by `at`, oldest window first. */
export async function expiredWaits(db: Executor, at: Date, limit: number): Promise<CronJobRunRow[]> {
  return db
    .select()
    .from(cronJobRuns)
    .where(and(eq(cronJobRuns.status, "AwaitingApproval"), lte(cronJobRuns.approvalUntil, at)))
    .orderBy(asc(cronJobRuns.approvalUntil))
    .limit(limit);
}

/**
 * The secret named `name`, made by the first instance that asks (the insert of any other does
 * nothing), so every instance on the database signs and checks with the same key.
 */
export async function sharedSecret(db: Executor, name: string): Promise<Buffer> {
  await db
    .insert(daemonSecrets)
    .values({ name, secret: randomBytes(32).toString("base64url") })
    .onConflictDoNothing();
  const [row] = await db.select().from(daemonSecrets).where(eq(daemonSecrets.name, name));
  return Buffer.from(row!.secret, "base64url");
}
