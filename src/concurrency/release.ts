import type { Db } from "../db/client.ts";
import { keysOfJobs, releaseWaiting, waitingKeys } from "./queries.ts";

/**
 * Runs of these jobs ended: each of their keys' free places goes to the key's oldest waiting slot.
 * Not under the keys' locks: a release only makes a waiting slot due now, and the claim of its
 * continuation checks the place again under the lock. Returns how many slots it released.
 */
export async function releaseKeysOf(db: Db, jobIds: readonly bigint[], at: Date): Promise<number> {
  let released = 0;
  for (const key of await keysOfJobs(db, jobIds)) released += await releaseWaiting(db, key, at);
  return released;
}

/**
 * Every key with a slot waiting: places freed by runs that ended without a release (a crash, an
 * Unknown close, a job whose key was edited) are given out on the sweeper's next pass.
 */
export async function releaseAllWaiting(db: Db, at: Date): Promise<number> {
  let released = 0;
  for (const key of await waitingKeys(db, at)) released += await releaseWaiting(db, key, at);
  return released;
}
