/**
 * The ledger's timeline (the dashboard's Ledger view, `GET /v1/run-timeline`): run counts per job,
 * time bucket and status, with each job's revisions in the range.
 */
import type { Executor } from "../db/client.ts";
import type { RunStatus } from "../db/schema/index.ts";
import { timelineRows, type TimelineFilter } from "./timeline-queries.ts";

export type { TimelineFilter };

export interface TimelineLane {
  jobId: string;
  name: string;
  removed: boolean;
  total: number;
  /** Non-empty cells only: [bucket index, status, count]. */
  cells: [number, RunStatus, number][];
  /** The job's revisions in the range (edits, pauses…), oldest first. */
  revisions: { revision: number; at: string; action: string; actor: string; note: string | null }[];
}

/**
 * Run counts per job, per time bucket and per status over [from, to): the ledger's timeline. A page
 * of jobs (those with runs in the range, by id); the counting is done by the database, so the answer
 * is at most limit × buckets × statuses cells whatever the number of runs, and only the runs of the
 * page's jobs are read.
 */
export async function runTimeline(
  db: Executor,
  filter: TimelineFilter,
): Promise<{ bucketMs: number; lanes: TimelineLane[]; more: boolean }> {
  const bucketMs = Math.max(1, Math.ceil((filter.to.getTime() - filter.from.getTime()) / filter.buckets));
  const [jobsFound, cells, revisions] = await timelineRows(db, filter, bucketMs);
  const page = jobsFound.slice(0, filter.limit);

  // A lane's total is the sum of its cells: the same runs, counted once. A job that joined or left
  // the page between the statements (created, or its runs pruned, meanwhile) has no lane here.
  const lanes: TimelineLane[] = page.map((job) => ({
    jobId: String(job.id),
    name: job.name,
    removed: job.deletedAt != null,
    total: 0,
    cells: [],
    revisions: [],
  }));
  const laneOf = new Map(lanes.map((l) => [l.jobId, l]));
  for (const c of cells) {
    const lane = laneOf.get(String(c.id));
    if (!lane) continue;
    // A bin starts a whole number of buckets after `from` (milliseconds, exact in a double).
    lane.cells.push([Math.round((c.binMs - filter.from.getTime()) / bucketMs), c.status, Number(c.n)]);
    lane.total += Number(c.n);
  }
  for (const r of revisions) {
    const { revision, action, actor, note } = r;
    laneOf.get(String(r.cronJobId))?.revisions.push({ revision, at: r.at.toISOString(), action, actor, note });
  }
  return { bucketMs, lanes, more: jobsFound.length > filter.limit };
}
