import {
  addJobInput,
  jobRunsQuery,
  jobsQuery,
  pauseInput,
  previewQuery,
  runsQuery,
  timelineQuery,
} from "../../cron/input.ts";
import { runSummary, summaryQuery } from "../../retention/summary.ts";
import { idParams } from "../params.ts";
import { route } from "../route.ts";

const jobParams = idParams("cron job");

/** Cron jobs, heartbeats and their runs. The service validates bodies too (in-process callers). */
export const cronRoutes = [
  route({
    method: "POST",
    url: "/v1/cron-jobs",
    tag: "cron",
    summary: "Add a cron job or heartbeat",
    description:
      "Give exactly one of `cron` (5 or 6 fields) or `every` (e.g. `30m`); `timezone` is an IANA zone; `sessionId` is required when `sessionMode` is `fixed`; `endsAt` must be after `startsAt`.",
    body: addJobInput,
    status: 201,
    ok: { 201: "The job" },
    handler: async ({ services, body }) => services.cron.add(body),
  }),
  route({
    method: "GET",
    url: "/v1/cron-jobs",
    tag: "cron",
    summary: "List cron jobs, each with its latest run",
    description:
      "Without `limit`, every job by id. With `limit`, a page: pass the answer's `next` as `after` for the following one. `q` keeps jobs whose name contains it (case-insensitive); `dueBefore` keeps unpaused jobs whose next slot is at or before it, earliest first, in one page (it does not combine with `after`).",
    query: jobsQuery,
    ok: {
      200: "`{ jobs, total, next }`: each job with `lastRun` (`{ id, status, scheduledFor, finishedAt, reason, decidedBy }` or null); `total` counts every match; `next` is null on the last page",
    },
    handler: async ({ services, query }) => services.cron.page(query),
  }),
  route({
    method: "GET",
    url: "/v1/cron-jobs/:id",
    tag: "cron",
    summary: "Show a cron job",
    params: jobParams,
    ok: { 200: "The job" },
    handler: async ({ services, params }) => services.cron.get(params.id),
  }),
  route({
    method: "DELETE",
    url: "/v1/cron-jobs/:id",
    tag: "cron",
    summary: "Remove a cron job (its run history stays)",
    params: jobParams,
    status: 204,
    ok: { 204: "Removed" },
    handler: async ({ services, params }) => {
      await services.cron.remove(params.id);
    },
  }),
  route({
    method: "POST",
    url: "/v1/cron-jobs/:id/pause",
    tag: "cron",
    summary: "Pause a job, with an optional note",
    params: jobParams,
    body: pauseInput,
    bodyOptional: true,
    ok: { 200: "The job" },
    handler: async ({ services, params, body }) => services.cron.pause(params.id, body),
  }),
  route({
    method: "POST",
    url: "/v1/cron-jobs/:id/resume",
    tag: "cron",
    summary: "Resume a paused job",
    params: jobParams,
    ok: { 200: "The job" },
    handler: async ({ services, params }) => services.cron.resume(params.id),
  }),
  route({
    method: "POST",
    url: "/v1/cron-jobs/:id/trigger",
    tag: "cron",
    summary: "Fire a job now (a manual run through the cronJobFiring chain)",
    params: jobParams,
    status: 201,
    ok: { 201: "The run" },
    handler: async ({ services, params }) => services.cron.trigger(params.id),
  }),
  route({
    method: "GET",
    url: "/v1/cron-jobs/:id/runs",
    tag: "cron",
    summary: "A job's runs, newest first",
    params: jobParams,
    query: jobRunsQuery,
    ok: { 200: "`{ runs }`" },
    handler: async ({ services, params, query }) => ({
      runs: await services.cron.runs({ ...query, jobId: params.id }),
    }),
  }),
  route({
    method: "GET",
    url: "/v1/runs",
    tag: "cron",
    summary: "Runs of every job, newest slot first",
    description:
      "`from` and `to` keep slots with from ≤ scheduledFor < to. `before` is a run id: the runs that follow it in this order (pass the last run of a page to get the next one).",
    query: runsQuery,
    ok: { 200: "`{ runs }`, each with its job's `jobName`" },
    handler: async ({ services, query }) => ({ runs: await services.cron.runs(query) }),
  }),
  route({
    method: "GET",
    url: "/v1/run-summary",
    tag: "cron",
    summary: "Run counts per job and status over [from, to), pruned history included",
    description:
      "Counts the runs still in the ledger plus the rollups retention left for those it removed (`rolledUp`). Rollups are per UTC day: a range that cuts a day counts that day's removed runs whole.",
    query: summaryQuery,
    ok: { 200: "`{ summary: [{ jobId, jobName, status, count, rolledUp }] }`" },
    handler: async ({ services, query }) => ({ summary: await runSummary(services.db, query) }),
  }),
  route({
    method: "GET",
    url: "/v1/run-timeline",
    tag: "cron",
    summary: "Run counts per job, time bucket and status over [from, to)",
    description:
      "The range is cut into `buckets` equal buckets of `bucketMs`. A page of `limit` jobs that have runs in the range, by id; pass `next` as `after` for the following page. Each lane lists its non-empty cells as `[bucket index, status, count]`.",
    query: timelineQuery,
    ok: { 200: "`{ from, to, buckets, bucketMs, lanes: [{ jobId, name, removed, total, cells }], next }`" },
    handler: async ({ services, query }) => services.cron.timeline(query),
  }),
  route({
    method: "GET",
    url: "/v1/cron-preview",
    tag: "cron",
    summary: "The next fire times of a schedule",
    description: "Give exactly one of `cron` or `every`.",
    query: previewQuery,
    ok: { 200: "`{ fireTimes }` (ISO 8601)" },
    handler: async ({ services, query }) => ({ fireTimes: services.cron.preview(query) }),
  }),
];
