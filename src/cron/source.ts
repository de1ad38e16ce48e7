import type { Db } from "../db/client.ts";
import type { DueSource } from "../scheduler/scheduler.ts";
import type { CronFiring } from "./firing.ts";
import { jitterOffset } from "./claim-plan.ts";
import { deferredDueBy, jobsDueBy } from "./queries.ts";

// Enough for any horizon in practice; more due moments simply wait for the next refill.
const MAX_LOADED = 50_000;

/** Cron jobs and heartbeats as a source of due moments for the scheduler (key: the job id). */
export function cronDueSource(db: Db, firing: CronFiring): DueSource {
  return {
    name: "cron",
    early: true,
    async loadDue(until) {
      const due = await jobsDueBy(db, until, MAX_LOADED);
      // A pause ends at its moment exactly; slots are spread by the job's jitter.
      return due.map((job) => ({
        key: String(job.id),
        at: new Date(job.nextFireAt.getTime() + (job.resumes ? 0 : jitterOffset(job))),
      }));
    },
    fire: (batch) => firing.fireSlots(batch.map(({ key, at }) => ({ jobId: BigInt(key), slot: at }))),
  };
}

/** Deferred slots (a plugin's tools.defer) as a second source (key: the Deferred run's id). */
export function deferredDueSource(db: Db, firing: CronFiring): DueSource {
  return {
    name: "deferred",
    async loadDue(until) {
      const due = await deferredDueBy(db, until, MAX_LOADED);
      return due.map((run) => ({ key: run.id, at: run.deferredUntil }));
    },
    async fire(batch) {
      await firing.fireDeferred(batch.map((b) => b.key));
      return new Map(); // a deferral fires once; nothing to re-arm
    },
  };
}
