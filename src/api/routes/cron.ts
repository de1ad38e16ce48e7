import { removeQuery } from "../../sessions/input.ts";
import {
  addJobInput,
  editJobInput,
  jobRunsQuery,
  jobsQuery,
  pauseInput,
  previewQuery,
  runsQuery,
  timelineQuery,
} from "../../cron/input.ts";
import { backfillInput, BACKFILL_DEFAULT_MAX, BACKFILL_HARD_MAX, skipInput } from "../../cron/backfill.ts";
import { runSummary, summaryQuery } from "../../retention/summary.ts";
import { idParams } from "../params.ts";
import { route } from "../route.ts";
import {
  backfillView,
  jobPage,
  previewAnswer,
  revisionList,
  runDetail,
  runList,
  runSummaryAnswer,
  runView,
  timelineView,
  tokenCreated,
  tokenList,
} from "../../cron/answers.ts";
import { jobView } from "../../cron/job-view.ts";
import {
  createTokenInput,
  eventPayload,
  idempotencyKey,
  MAX_PAYLOAD_BYTES,
  payloadObject,
  tokenNameParam,
} from "../../cron/trigger-tokens.ts";
import { validate } from "../../validation.ts";

const jobParams = idParams("cron job");
const tokenParams = jobParams.extend({ name: tokenNameParam.describe("The token's name.") }).strict();

/** An event's body: any JSON object (its size is checked by the handler, see eventPayload). */
const eventBody = payloadObject.describe("The event's payload: any JSON object.");

const headerValue = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join(",") : value);

const isEmpty = (body: unknown) =>
  typeof body === "object" && body !== null && !Array.isArray(body) && Object.keys(body).length === 0;

const runParams = idParams("run");

/** Cron jobs, heartbeats and their runs. The service validates bodies too (in-process callers). */
export const cronRoutes = [
  route({
    method: "POST",
    url: "/v1/cron-jobs",
    scope: "operator",
    tag: "cron",
    summary: "Add a cron job or heartbeat",
    description:
      "Give exactly one of `cron` (5 or 6 fields) or `every` (e.g. `30m`); `timezone` is an IANA zone; `sessionId` is required when `sessionMode` is `fixed`; `endsAt` must be after `startsAt`.",
    body: addJobInput,
    status: 201,
    ok: { 201: { description: "The job", schema: jobView } },
    handler: async ({ services, body, actor }) => services.cron.add(body, actor),
  }),
  route({
    method: "GET",
    url: "/v1/cron-jobs",
    scope: "operator",
    tag: "cron",
    summary: "List cron jobs, each with its latest run",
    description:
      "Without `limit`, every job by id. With `limit`, a page: pass the answer's `next` as `after` for the following one. `q` keeps jobs whose name contains it (case-insensitive); `dueBefore` keeps unpaused jobs whose next slot is at or before it, earliest first, in one page (it does not combine with `after`).",
    query: jobsQuery,
    ok: {
      200: {
        description:
          "`{ jobs, total, next }`: each job with `lastRun` (`{ id, status, scheduledFor, finishedAt, reason, decidedBy }` or null); `total` counts every match; `next` is null on the last page",
        schema: jobPage,
      },
    },
    handler: async ({ services, query }) => services.cron.page(query),
  }),
  route({
    method: "GET",
    url: "/v1/cron-jobs/:id",
    scope: "operator",
    tag: "cron",
    summary: "Show a cron job",
    params: jobParams,
    ok: { 200: { description: "The job", schema: jobView } },
    handler: async ({ services, params }) => services.cron.get(params.id),
  }),
  route({
    method: "PATCH",
    url: "/v1/cron-jobs/:id",
    tag: "cron",
    scope: "operator",
    summary: "Edit a job in place",
    description:
      "Any field `POST /v1/cron-jobs` takes; `cron` or `every` replaces the schedule; null clears `sessionId`, `activeHours`, `jitter`, `startsAt`, `endsAt` or `maxRuns`. The id and history stay, the next fire is recomputed and every instance re-arms; a slot already claimed is not affected. A job a jobs file manages (`managedBy`) answers 409 unless `force` is true.",
    params: jobParams,
    body: editJobInput,
    ok: { 200: { description: "The job as edited", schema: jobView } },
    errors: [409],
    handler: async ({ services, params, body, actor }) => services.cron.edit(params.id, body, actor),
  }),
  route({
    method: "GET",
    url: "/v1/cron-jobs/:id/revisions",
    tag: "cron",
    scope: "operator",
    summary: "A job's revisions, oldest first",
    description:
      "Every create, edit, pause, resume and delete: when (`at`), by whom (`actor`: `uid:N` on the Unix socket, `token` on TCP, `daemon` for a pause that ended by itself), `action`, `note`, and `changes` (`[{ field, before, after }]`) with the full `before` and `after`. Runs carry the `revisionId` they fired under.",
    params: jobParams,
    ok: { 200: { description: "`{ revisions }`", schema: revisionList } },
    handler: async ({ services, params }) => ({ revisions: await services.cron.revisions(params.id) }),
  }),
  route({
    method: "DELETE",
    url: "/v1/cron-jobs/:id",
    scope: "operator",
    tag: "cron",
    summary: "Remove a cron job (its run history stays)",
    description: "A job a jobs file manages (`managedBy`) answers 409 unless `force=true`, as an edit does.",
    params: jobParams,
    query: removeQuery,
    status: 204,
    ok: { 204: "Removed" },
    errors: [409],
    handler: async ({ services, params, query, actor }) => {
      await services.cron.remove(params.id, actor, { force: query.force });
    },
  }),
  route({
    method: "POST",
    url: "/v1/cron-jobs/:id/pause",
    scope: "operator",
    tag: "cron",
    summary: "Pause a job, with an optional note, until resumed or until a moment",
    description: "With `until` (in the future), the daemon resumes the job by itself at that moment.",
    params: jobParams,
    body: pauseInput,
    bodyOptional: true,
    ok: { 200: { description: "The job", schema: jobView } },
    handler: async ({ services, params, body, actor }) => services.cron.pause(params.id, body, actor),
  }),
  route({
    method: "POST",
    url: "/v1/cron-jobs/:id/resume",
    scope: "operator",
    tag: "cron",
    summary: "Resume a paused job",
    params: jobParams,
    ok: { 200: { description: "The job", schema: jobView } },
    handler: async ({ services, params, actor }) => services.cron.resume(params.id, actor),
  }),
  route({
    method: "POST",
    url: "/v1/cron-jobs/:id/trigger",
    scope: "operator",
    jobToken: true,
    tag: "cron",
    summary: "Fire a job now: a manual run, or an event's (a run through the cronJobFiring chain)",
    description: `With one of the job's trigger tokens (\`missiond cron token create\`), or with a body or an \`Idempotency-Key\`, the run has trigger \`event\`: the body (a JSON object of at most ${MAX_PAYLOAD_BYTES} bytes) is its \`payload\`, which the job's prompt template and cronJobFiring receive. A second call with the same \`Idempotency-Key\` answers the first call's run (200) and makes none. A paused job's event is recorded Skipped. Without any of these, an operator's call is a \`manual\` run.`,
    params: jobParams,
    body: eventBody,
    bodyOptional: true,
    bodyCheckedByHandler: true,
    status: 201,
    ok: {
      201: { description: "The run", schema: runView },
      200: { description: "The run an earlier call with this Idempotency-Key made", schema: runView },
    },
    errors: [413],
    handler: async ({ services, params, body, caller, reply }) => {
      const key = headerValue(reply.request.headers["idempotency-key"]);
      const payload = eventPayload(body === undefined || isEmpty(body) ? null : body);
      const event =
        caller?.job !== undefined || payload !== null || key !== undefined
          ? { payload, key: key === undefined ? undefined : validate(idempotencyKey, key, "Idempotency-Key") }
          : undefined;
      if (!event) return services.cron.trigger(params.id);
      const { run, repeated } = await services.cron.event(params.id, event);
      if (repeated) void reply.status(200);
      return run;
    },
  }),
  route({
    method: "POST",
    url: "/v1/cron-jobs/:id/tokens",
    scope: "operator",
    tag: "cron",
    summary: "Make a trigger token for the job",
    description:
      "The token can call `POST /v1/cron-jobs/:id/trigger`, `GET /v1/cron-jobs/:id/runs` and `GET /v1/runs/:id` of this job and nothing else. Its value is in this answer only (the daemon keeps its hash). Recorded in the job's revisions.",
    params: jobParams,
    body: createTokenInput,
    bodyOptional: true,
    status: 201,
    ok: { 201: { description: "The token, with its value", schema: tokenCreated } },
    errors: [409],
    handler: async ({ services, params, body, actor }) => services.cron.tokens.create(params.id, body, actor),
  }),
  route({
    method: "GET",
    url: "/v1/cron-jobs/:id/tokens",
    scope: "operator",
    tag: "cron",
    summary: "A job's trigger tokens (never their values)",
    params: jobParams,
    ok: { 200: { description: "`{ tokens }`", schema: tokenList } },
    handler: async ({ services, params }) => ({ tokens: await services.cron.tokens.list(params.id) }),
  }),
  route({
    method: "DELETE",
    url: "/v1/cron-jobs/:id/tokens/:name",
    scope: "operator",
    tag: "cron",
    summary: "Revoke a trigger token: calls with it are refused from now on",
    params: tokenParams,
    status: 204,
    ok: { 204: "Revoked" },
    handler: async ({ services, params, actor }) => {
      await services.cron.tokens.remove(params.id, params.name, actor);
    },
  }),
  route({
    method: "POST",
    url: "/v1/cron-jobs/:id/backfill",
    tag: "cron",
    scope: "operator",
    summary: "Run the job's slots of a past range (trigger `backfill`)",
    description: `The job's own schedule with from ≤ slot < to; \`to\` must not be in the future. Each slot goes through the cronJobFiring chain once: a slot that already has a run (any status) is left alone and reported as \`exists\`. Under overlap \`allow\` the slots start at once; under any other policy one at a time, each when the job has no run going. A range with more than \`max\` slots (default ${BACKFILL_DEFAULT_MAX}, at most ${BACKFILL_HARD_MAX}) is refused. \`dryRun\` lists the slots and writes nothing.`,
    params: jobParams,
    body: backfillInput,
    // An unknown job answers 404 before the body is looked at.
    bodyCheckedByHandler: true,
    ok: {
      200: {
        description:
          "`{ jobId, from, to, dryRun, slots: [{ scheduledFor, outcome, runId, status }] }`; outcome is `started`, `queued`, `exists` or `already queued`",
        schema: backfillView,
      },
    },
    handler: async ({ services, params, body, actor }) => services.cron.backfill(params.id, body, actor),
  }),
  route({
    method: "POST",
    url: "/v1/cron-jobs/:id/skip",
    tag: "cron",
    scope: "operator",
    summary: "Skip the job's next slots (a count, or until a time)",
    description:
      "Give exactly one of `count` (the next N slots), `until` (every slot before it) or `cancel: true` (count 0 cancels too). Each skipped slot is recorded Skipped with `reason` when it comes, exactly once, like any slot.",
    params: jobParams,
    body: skipInput,
    bodyCheckedByHandler: true,
    ok: {
      200: {
        description: "The job, with `skip: { remaining, until, reason }` (null when nothing is to be skipped)",
        schema: jobView,
      },
    },
    handler: async ({ services, params, body, actor }) => services.cron.skip(params.id, body, actor),
  }),
  route({
    method: "GET",
    url: "/v1/cron-jobs/:id/runs",
    scope: "operator",
    tag: "cron",
    summary: "A job's runs, newest first",
    description: "A trigger token of the job may read them too.",
    jobToken: true,
    params: jobParams,
    query: jobRunsQuery,
    ok: { 200: { description: "`{ runs }`", schema: runList } },
    handler: async ({ services, params, query }) => ({
      runs: await services.cron.runs({ ...query, jobId: params.id }),
    }),
  }),
  route({
    method: "GET",
    url: "/v1/runs",
    scope: "operator",
    tag: "cron",
    summary: "Runs of every job, newest slot first",
    description:
      "`from` and `to` keep slots with from ≤ scheduledFor < to. `before` is a run id: the runs that follow it in this order (pass the last run of a page to get the next one).",
    query: runsQuery,
    ok: { 200: { description: "`{ runs }`, each with its job's `jobName`", schema: runList } },
    handler: async ({ services, query }) => ({ runs: await services.cron.runs(query) }),
  }),
  route({
    method: "GET",
    url: "/v1/runs/:id",
    scope: "operator",
    tag: "cron",
    summary: "One run: its slot, trigger, revision, attempts, result and the chain's decisions",
    description:
      "`decisions` are the cronJobFiring handlers that ran for it (plugin, outcome, reason, duration). `deliveryLatenessMs` is slot → delivery started; `claimAheadMs` how long before its slot it was claimed. A trigger token of the run's job may read it too (another job's run answers 404).",
    jobToken: "run",
    params: runParams,
    ok: { 200: { description: "The run", schema: runDetail } },
    handler: async ({ services, params }) => services.cron.run(params.id),
  }),
  route({
    method: "GET",
    url: "/v1/run-summary",
    tag: "cron",
    scope: "operator",
    summary: "Run counts per job and status over [from, to), pruned history included",
    description:
      "Counts the runs still in the ledger plus the rollups retention left for those it removed (`rolledUp`). Rollups are per UTC day: a range that cuts a day counts that day's removed runs whole.",
    query: summaryQuery,
    ok: {
      200: {
        description:
          "`{ summary: [{ jobId, jobName, agentId, status, count, rolledUp, inputTokens, outputTokens, costUsd }] }`",
        schema: runSummaryAnswer,
      },
    },
    handler: async ({ services, query }) => ({ summary: await runSummary(services.db, query) }),
  }),
  route({
    method: "GET",
    url: "/v1/run-timeline",
    scope: "operator",
    tag: "cron",
    summary: "Run counts per job, time bucket and status over [from, to)",
    description:
      "The range is cut into `buckets` equal buckets of `bucketMs`. A page of `limit` jobs that have runs in the range, by id; pass `next` as `after` for the following page. Each lane lists its non-empty cells as `[bucket index, status, count]`.",
    query: timelineQuery,
    ok: {
      200: {
        description:
          "`{ from, to, buckets, bucketMs, lanes: [{ jobId, name, removed, total, cells, revisions }], next }`; `revisions` are the job's changes in the range: `[{ revision, at, action, actor, note }]`",
        schema: timelineView,
      },
    },
    handler: async ({ services, query }) => services.cron.timeline(query),
  }),
  route({
    method: "GET",
    url: "/v1/cron-preview",
    scope: "operator",
    tag: "cron",
    summary: "The next fire times of a schedule",
    description: "Give exactly one of `cron` or `every`.",
    query: previewQuery,
    ok: { 200: { description: "`{ fireTimes }` (ISO 8601)", schema: previewAnswer } },
    handler: async ({ services, query }) => ({ fireTimes: services.cron.preview(query) }),
  }),
];
