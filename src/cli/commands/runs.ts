import type { Command } from "commander";
import type { RunAttempt } from "../../cron/attempts.ts";
import type { RunView } from "../../cron/views.ts";
import { RUN_STATUSES } from "../../db/schema/enums.ts";
import type { SummaryRow } from "../../retention/summary.ts";
import { choiceOption, positiveInt, UsageError, type CliContext } from "../context.ts";
import { fields, shorten, table } from "../format.ts";
import { registerDecisions } from "./runs-decide.ts";
import { dollars } from "../../budgets/limits.ts";

// Runs per request of `runs export`: the API's largest page.
const EXPORT_PAGE = 1_000;

/** `missiond runs …`: the run ledger. */
export function registerRuns(program: Command, ctx: CliContext): void {
  const runs = program.command("runs").description("the run ledger");
  list(runs, ctx);
  show(runs, ctx);
  exportRuns(runs, ctx);
  registerDecisions(runs, ctx);
}

interface ListOptions {
  job?: string;
  status?: string;
  limit: number;
  from?: string;
  to?: string;
  summary?: boolean;
}

function list(runs: Command, ctx: CliContext): void {
  runs
    .command("ls")
    .description("list runs, newest slot first; or --summary: counts per job and status, pruned history included")
    .option("--job <id>", "only this job's runs")
    .addOption(choiceOption("--status <status>", "only runs with this status", RUN_STATUSES))
    .option("--limit <n>", "at most this many", positiveInt, 50)
    .option("--from <iso>", "only slots at or after this instant")
    .option("--to <iso>", "only slots before this instant")
    .option("--summary", "counts per job and status (from the ledger and the rollups of pruned runs)")
    .action(async (opts: ListOptions) => {
      if (opts.summary) return summary(ctx, opts);
      const { runs: found } = await ctx.client().get<{ runs: (RunView & { revision: number | null })[] }>("/v1/runs", {
        jobId: opts.job,
        status: opts.status,
        limit: opts.limit,
        from: opts.from,
        to: opts.to,
      });
      ctx.print(found, () =>
        table(
          [
            "ID",
            "JOB",
            "SCHEDULED FOR",
            "TRIGGER",
            "REVISION",
            "STATUS",
            "LATE MS",
            "AHEAD MS",
            "TOKENS",
            "COST",
            "BY",
            "REASON",
          ],
          found.map((r) => [
            r.id,
            r.cronJobId,
            r.scheduledFor,
            r.trigger,
            r.revision,
            r.status,
            r.deliveryLatenessMs,
            r.claimAheadMs,
            tokensOf(r.usage),
            r.usage?.costUsd == null ? null : dollars(r.usage.costUsd),
            r.decidedBy ?? r.claimedBy,
            shorten(whyOf(r), 80),
          ]),
        ),
      );
    });
}

/** Tokens in and out, summed, as one column shows them. */
function tokensOf(usage: RunView["usage"]): number | null {
  if (!usage || (usage.inputTokens === null && usage.outputTokens === null)) return null;
  return (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
}

/** A run's usage in words: `1200 tokens in, 340 out, $0.02, model claude-x`. */
function usageText(usage: RunView["usage"]): string | null {
  if (!usage) return null;
  const tokens =
    usage.inputTokens === null && usage.outputTokens === null
      ? null
      : `${usage.inputTokens ?? "?"} tokens in, ${usage.outputTokens ?? "?"} out`;
  const cost = usage.costUsd === null ? null : dollars(usage.costUsd);
  const model = usage.model === null ? null : `model ${usage.model}`;
  return [tokens, cost, model].filter(Boolean).join(", ");
}

const FAILED: readonly string[] = ["Failed", "TimedOut", "Unknown"];

/** Why a run did not run or did not succeed: its reason, else (a failure) its output's first line. */
function whyOf(run: RunView): string | null {
  if (run.reason) return run.reason;
  if (!FAILED.includes(run.status)) return null;
  const exit = run.exitCode !== null ? `exit ${run.exitCode}` : null;
  const line = run.output?.trim().split("\n")[0] || null;
  return [exit, line].filter(Boolean).join(": ") || null;
}

type RunDetail = RunView & {
  jobName: string;
  revision: number | null;
  attempts: number;
  failedAttempts: number;
  attemptHistory: RunAttempt[];
  decisions: {
    plugin: string;
    outcome: string;
    reason: string | null;
    fields: string[] | null;
    durationMs: number;
    at: string;
    shadow: boolean;
  }[];
};

// The output's excerpt in the human view; --json has it whole.
const EXCERPT = 2_000;

function show(runs: Command, ctx: CliContext): void {
  runs
    .command("show <id>")
    .description("one run: slot, trigger, revision, lateness, attempts, result, output and the chain's decisions")
    .action(async (id: string) => {
      const run = await ctx.client().get<RunDetail>(`/v1/runs/${encodeURIComponent(id)}`);
      ctx.print(run, () => runText(run));
    });
}

function runText(run: RunDetail): string {
  const answered = run.attemptHistory.at(-1)?.httpStatus ?? null;
  const result =
    run.exitCode !== null
      ? `exit ${run.exitCode}`
      : answered !== null
        ? `HTTP ${answered}`
        : (/^HTTP \d{3}\b/.exec(run.output ?? "")?.[0] ?? null);
  const head = fields(
    {
      run: run.id,
      job: `${run.jobName} (${run.cronJobId})`,
      slot: run.scheduledFor,
      trigger: `${run.trigger}${run.backfilled ? " (backfilled)" : ""}`,
      revision: run.revision,
      status: run.status,
      reason: run.reason,
      "decided by": run.decidedBy,
      "awaits until": run.status === "AwaitingApproval" ? run.approvalUntil : null,
      "approved by": run.approvedBy && `${run.approvedBy} at ${run.approvedAt}`,
      key: run.concurrencyKey,
      claimed: `${run.claimedAt} by ${run.claimedBy}${run.claimAheadMs > 0 ? ` (${run.claimAheadMs} ms ahead of the slot)` : ""}`,
      started: run.startedAt,
      late: run.deliveryLatenessMs === null ? null : `${run.deliveryLatenessMs} ms (slot → delivery started)`,
      finished: run.finishedAt,
      session: run.sessionId,
      executor: run.executor,
      attempts: run.attempts,
      result,
      usage: usageText(run.usage),
    },
    11,
  );
  const decisions = run.decisions.length
    ? table(
        ["PLUGIN", "DECISION", "REASON", "MS", "AT"],
        run.decisions.map((d) => [
          `${d.plugin}${d.shadow ? " (shadow)" : ""}`,
          d.outcome === "changed" && d.fields ? `changed ${d.fields.join(", ")}` : d.outcome,
          shorten(d.reason, 80),
          d.durationMs,
          d.at,
        ]),
      )
    : "no plugin decided on it";
  const output = run.output === null ? "(none)" : (shorten(run.output, EXCERPT) ?? "");
  return [
    head,
    "",
    "chain:",
    decisions,
    "",
    "prompt fired:",
    run.promptFired ?? "(none)",
    "",
    "attempts:",
    attemptsText(run.attemptHistory),
    "",
    "output:",
    output,
  ].join("\n");
}

/** How `runs show` words an attempt's status: a vanished attempt is a lost one. */
const ATTEMPT_WORDS: Partial<Record<RunAttempt["status"], string>> = { TimedOut: "timed out", Unknown: "lost" };

/** One line per attempt: `#1  failed  HTTP 503  120 ms  webhook answered 503: busy`. */
function attemptsText(attempts: readonly RunAttempt[]): string {
  if (attempts.length === 0) return "none started";
  return table(
    ["#", "STATUS", "ANSWER", "TOOK", "ERROR OR OUTPUT"],
    attempts.map((a) => [
      `#${a.number}`,
      ATTEMPT_WORDS[a.status] ?? a.status.toLowerCase(),
      a.httpStatus !== null ? `HTTP ${a.httpStatus}` : a.exitCode !== null ? `exit ${a.exitCode}` : null,
      a.durationMs !== null ? `${a.durationMs} ms` : null,
      // The output of a success is the run's own, below; a failure's excerpt says why.
      a.status === "Succeeded" ? "" : shorten(a.excerpt?.trim().split("\n")[0] ?? null, 100),
    ]),
  );
}

async function summary(ctx: CliContext, opts: ListOptions): Promise<void> {
  if (opts.status) throw new UsageError("--summary counts every status; leave out --status");
  const { summary: found } = await ctx.client().get<{ summary: SummaryRow[] }>("/v1/run-summary", {
    jobId: opts.job,
    from: opts.from,
    to: opts.to,
  });
  ctx.print(found, () =>
    table(
      ["JOB", "NAME", "AGENT", "STATUS", "COUNT", "OF WHICH PRUNED", "TOKENS IN", "TOKENS OUT", "COST"],
      found.map((r) => [
        r.jobId,
        r.jobName,
        r.agentId,
        r.status,
        r.count,
        r.rolledUp,
        r.inputTokens,
        r.outputTokens,
        dollars(r.costUsd),
      ]),
    ),
  );
}

/** Every run with a slot before --before, as JSON lines (the API's run shape with jobName), newest first. */
function exportRuns(runs: Command, ctx: CliContext): void {
  runs
    .command("export")
    .description("print runs as JSON lines, newest slot first, to archive history before retention removes it")
    .requiredOption("--before <iso>", "runs whose slot is before this instant (ISO 8601 with offset)")
    .option("--job <id>", "only this job's runs")
    .action(async (opts: { before: string; job?: string }) => {
      if (Number.isNaN(Date.parse(opts.before))) throw new UsageError(`--before: not an instant: "${opts.before}"`);
      const client = ctx.client();
      let cursor: string | undefined;
      for (;;) {
        const { runs: page } = await client.get<{ runs: RunView[] }>("/v1/runs", {
          to: opts.before,
          jobId: opts.job,
          limit: EXPORT_PAGE,
          before: cursor,
        });
        if (page.length > 0) ctx.io.stdout(page.map((run) => `${JSON.stringify(run)}\n`).join(""));
        if (page.length < EXPORT_PAGE) return;
        cursor = page.at(-1)!.id;
      }
    });
}
