import { z } from "zod";
import { count, idString, instant } from "../answer-fields.ts";
import { DECISION_OUTCOMES, REVISION_ACTIONS, RUN_STATUSES, RUN_TRIGGERS } from "../db/schema/enums.ts";
import { jobView } from "./job-view.ts";
import { usageView } from "../usage/usage.ts";

/** What the cron routes answer, written from views.ts, revisions.ts, ledger-queries.ts and the service. */

export const runStatus = z.enum(RUN_STATUSES);
const status = runStatus;

/** A run of the ledger (views.ts runView). */
export const runView = z
  .object({
    id: idString,
    cronJobId: idString,
    scheduledFor: instant,
    trigger: z.enum(RUN_TRIGGERS),
    revisionId: idString.nullable().describe("The job's revision the run fired under."),
    status,
    reason: z.string().nullable(),
    decidedBy: z.string().nullable(),
    promptFired: z.string().nullable(),
    claimedBy: z.string(),
    claimedAt: instant,
    startedAt: instant.nullable(),
    finishedAt: instant.nullable(),
    latenessMs: count.nullable().describe("Claim time − slot, in ms: negative when claimed ahead of the slot."),
    deliveryLatenessMs: count
      .nullable()
      .describe("Slot → delivery started, in ms, never negative: the lateness the agent sees (null until started)."),
    claimAheadMs: count.describe("How long before its slot the run was claimed, in ms (0 when claimed after it)."),
    backfilled: z.boolean(),
    sessionId: z.string().nullable(),
    executor: z.string().nullable(),
    exitCode: count.nullable(),
    output: z.string().nullable(),
    concurrencyKey: z
      .string()
      .nullable()
      .describe("The concurrency key whose place the run held or waited for (`agent` resolved to the agent's id)."),
    approvalUntil: instant.nullable().describe("AwaitingApproval: when the run is Cancelled if nobody decides."),
    approvedBy: z.string().nullable().describe("Who approved the run (the caller, or `link` for a signed link)."),
    approvedAt: instant.nullable(),
    usage: usageView.nullable().describe("What the run consumed, as its agent or provider reported it."),
    payload: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe("An `event` run's JSON body (null for other runs, or an event without one)."),
  })
  .strict();

/** A job's trigger token as listed (trigger-tokens.ts tokenView): never its value. */
export const tokenAnswer = z
  .object({
    name: z.string(),
    prefix: z.string().describe("The token's first characters, to tell it apart."),
    createdAt: instant,
    createdBy: z.string(),
    lastUsedAt: instant.nullable(),
  })
  .strict();

export const tokenCreated = tokenAnswer
  .extend({ token: z.string().describe("The token itself: shown this once, stored only as its hash.") })
  .strict();

export const tokenList = z.object({ tokens: z.array(tokenAnswer) }).strict();

/** A run as the run lists give it: with its job's name and the revision's number. */
export const listedRun = runView
  .extend({ jobName: z.string(), revision: count.nullable().describe("The number of the revision it fired under.") })
  .strict();

export const runList = z.object({ runs: z.array(listedRun) }).strict();

/** One handler of the firing chain that decided on a run (the decision log). */
export const runDecision = z
  .object({
    plugin: z.string(),
    hook: z.string(),
    outcome: z.enum(DECISION_OUTCOMES),
    reason: z.string().nullable(),
    fields: z.array(z.string()).nullable().describe("The fields a `changed` decision rewrote."),
    durationMs: count,
    at: instant,
    shadow: z.boolean(),
  })
  .strict();

/** One attempt at delivering a run (cron/attempts.ts attemptsOf). */
export const runAttempt = z
  .object({
    number: count.describe("1 for the first delivery, 2 for its first retry, …"),
    status: status.describe(
      "How it ended: Failed or TimedOut for a retried one; the last one's is the run's (Running while it executes, Unknown when it was lost with the instance that ran it).",
    ),
    startedAt: instant.nullable().describe("Null when not known (a lost attempt, one still running)."),
    finishedAt: instant.nullable(),
    durationMs: count.nullable(),
    httpStatus: count.nullable().describe("What the agent's endpoint or model provider answered (webhook, llm)."),
    exitCode: count.nullable().describe("The command's exit code (command executor)."),
    excerpt: z
      .string()
      .nullable()
      .describe("The error, or the output's end, at most 500 characters (the run's `output` has more)."),
  })
  .strict();

/** `GET /v1/runs/:id`: a run with its attempts and the decisions of the chain that fired it. */
export const runDetail = listedRun
  .extend({
    attempts: count.describe("Deliveries started."),
    failedAttempts: count.describe("Deliveries that ended in a recorded failure (and were retried or gave up)."),
    attemptHistory: z
      .array(runAttempt)
      .describe("Its delivery attempts, oldest first (the latest 20 of a run retried more often)."),
    decisions: z.array(runDecision),
  })
  .strict();

/** A job's latest run, as the list page shows it. */
export const lastRun = z
  .object({
    id: idString,
    status,
    scheduledFor: instant,
    finishedAt: instant.nullable(),
    reason: z.string().nullable(),
    decidedBy: z.string().nullable(),
  })
  .strict();

/** A job of the list page: the job with its latest run. */
export const listedJob = jobView.extend({ lastRun: lastRun.nullable() }).strict();

export const jobPage = z
  .object({
    jobs: z.array(listedJob),
    total: count,
    next: idString.nullable().describe("The `after` of the following page; null on the last one."),
  })
  .strict();

/** A job's revision (revisions.ts revisionView); the snapshots are the job's stored fields. */
export const revisionView = z
  .object({
    id: idString,
    cronJobId: idString,
    revision: count,
    at: instant,
    actor: z.string(),
    action: z.enum(REVISION_ACTIONS),
    note: z.string().nullable(),
    changes: z.array(z.object({ field: z.string(), before: z.unknown(), after: z.unknown() }).strict()),
    before: z.record(z.string(), z.unknown()).nullable(),
    after: z.record(z.string(), z.unknown()).nullable(),
  })
  .strict();

export const revisionList = z.object({ revisions: z.array(revisionView) }).strict();

export const backfillView = z
  .object({
    jobId: idString,
    from: instant,
    to: instant,
    dryRun: z.boolean(),
    slots: z.array(
      z
        .object({
          scheduledFor: instant,
          outcome: z.enum(["started", "queued", "exists", "already queued"]),
          runId: idString.nullable(),
          status: status.nullable(),
        })
        .strict(),
    ),
  })
  .strict();

export const runSummaryAnswer = z
  .object({
    summary: z.array(
      z
        .object({
          jobId: idString,
          jobName: z.string(),
          agentId: z.string(),
          status,
          count,
          rolledUp: count.describe("Of which rolled up."),
          inputTokens: count.describe("Tokens in that these runs reported, pruned runs included."),
          outputTokens: count.describe("Tokens out that these runs reported, pruned runs included."),
          costUsd: z.number().describe("What these runs reported they cost, in US dollars, pruned runs included."),
        })
        .strict(),
    ),
  })
  .strict();

export const timelineView = z
  .object({
    from: instant,
    to: instant,
    buckets: count,
    bucketMs: count,
    lanes: z.array(
      z
        .object({
          jobId: idString,
          name: z.string(),
          removed: z.boolean(),
          total: count,
          cells: z.array(z.tuple([count, status, count]).describe("[bucket index, status, count]")),
          revisions: z.array(
            z
              .object({
                revision: count,
                at: instant,
                action: z.enum(REVISION_ACTIONS),
                actor: z.string(),
                note: z.string().nullable(),
              })
              .strict(),
          ),
        })
        .strict(),
    ),
    next: idString.nullable(),
  })
  .strict();

export const previewAnswer = z.object({ fireTimes: z.array(instant) }).strict();

/** POST /v1/prompt-preview: a template rendered for an example run. */
export const promptPreviewAnswer = z
  .object({ prompt: z.string().describe("The prompt as the example run would fire it.") })
  .strict();
