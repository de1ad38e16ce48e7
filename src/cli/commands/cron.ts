import { InvalidArgumentError, type Command } from "commander";
import { previewSlots, assertCron, parseEvery, type Schedule } from "../../cron/schedule.ts";
import type { JobView, RunView } from "../../cron/views.ts";
import { registerExport } from "./apply.ts";
import { nonNegativeInt, positiveInt, UsageError, type CliContext } from "../context.ts";
import { addJobFlags, asFlags, jobBody } from "./job-flags.ts";
import { fields, shorten, table } from "../format.ts";
import { BACKFILL_DEFAULT_MAX, BACKFILL_HARD_MAX } from "../../cron/backfill.ts";
import type { BackfillView } from "../../cron/backfill-service.ts";
import { registerCronEdit } from "./cron-edit.ts";
import { registerCronToken } from "./cron-token.ts";
import { previewPrompt } from "../../cron/template-preview.ts";
import { parseLabel } from "../../labels/labels.ts";

/** `missiond cron …`: cron jobs and heartbeats. */
export function registerCron(program: Command, ctx: CliContext): void {
  const cron = program.command("cron").description("cron jobs and heartbeats");
  add(cron, ctx);
  list(cron, ctx);
  show(cron, ctx);
  registerCronEdit(cron, ctx);
  pause(cron, ctx);
  resume(cron, ctx);
  trigger(cron, ctx);
  backfill(cron, ctx);
  skip(cron, ctx);
  remove(cron, ctx);
  preview(cron, ctx);
  registerExport(cron, ctx);
  registerCronToken(cron, ctx);
}

function add(cron: Command, ctx: CliContext): void {
  addJobFlags(cron.command("add").description("add a cron job or heartbeat"), "add").action(
    async (opts: Record<string, unknown>) => {
      const job = await asFlags(ctx.client().post<JobView>("/v1/cron-jobs", jobBody(opts, "add")));
      ctx.print(job, () => `added cron job ${job.id} "${job.name}"; next fire ${job.nextFireAt ?? "never"}`);
    },
  );
}

/** Collects `--label key=value` flags, each checked as the daemon would. */
function labelFlag(text: string, previous: string[] | undefined): string[] {
  try {
    const [key, value] = parseLabel(text);
    return [...(previous ?? []), `${key}=${value}`];
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

function list(cron: Command, ctx: CliContext): void {
  cron
    .command("ls")
    .description("list cron jobs")
    .option("--label <key=value>", "only jobs carrying this label (repeat: all of them)", labelFlag)
    .action(async (opts: { label?: string[] }) => {
      const query = opts.label ? `?label=${encodeURIComponent(opts.label.join(","))}` : "";
      const { jobs } = await ctx.client().get<{ jobs: JobView[] }>(`/v1/cron-jobs${query}`);
      ctx.print(jobs, () =>
        table(
          ["ID", "NAME", "KIND", "AGENT", "SCHEDULE", "TZ", "NEXT FIRE", "STATE", "DESCRIPTION"],
          jobs.map((j) => [
            j.id,
            j.name,
            j.kind,
            j.agentId,
            j.cron ?? `every ${j.every}`,
            j.timezone,
            j.nextFireAt,
            j.paused
              ? `paused${j.pausedUntil ? ` until ${j.pausedUntil}` : ""}${j.pausedNote ? `: ${j.pausedNote}` : ""}`
              : "active",
            shorten(j.description, 40),
          ]),
        ),
      );
    });
}

const jobPath = (id: string, action = "") => `/v1/cron-jobs/${encodeURIComponent(id)}${action}`;

function show(cron: Command, ctx: CliContext): void {
  cron
    .command("show <id>")
    .description("show one cron job")
    .action(async (id: string) => {
      const job = await ctx.client().get<JobView>(jobPath(id));
      ctx.print(job, () => fields({ ...job, skip: job.skip && skipSummary(job.skip) }, 14));
    });
}

function pause(cron: Command, ctx: CliContext): void {
  cron
    .command("pause <id>")
    .description("stop claiming a job's slots until it is resumed")
    .option("--note <text>", "why (shown in cron ls)")
    .option("--until <iso>", "resume by itself at this instant (ISO 8601 with offset)")
    .action(async (id: string, opts: { note?: string; until?: string }) => {
      const job = await ctx.client().post<JobView>(jobPath(id, "/pause"), {
        ...(opts.note ? { note: opts.note } : {}),
        ...(opts.until ? { until: opts.until } : {}),
      });
      ctx.print(
        job,
        () =>
          `paused cron job ${job.id} "${job.name}"${job.pausedUntil ? ` until ${job.pausedUntil}` : ""}${job.pausedNote ? `: ${job.pausedNote}` : ""}`,
      );
    });
}

function resume(cron: Command, ctx: CliContext): void {
  cron
    .command("resume <id>")
    .description("resume a paused job from its next slot")
    .action(async (id: string) => {
      const job = await ctx.client().post<JobView>(jobPath(id, "/resume"), {});
      ctx.print(job, () => `resumed cron job ${job.id} "${job.name}"; next fire ${job.nextFireAt ?? "never"}`);
    });
}

function trigger(cron: Command, ctx: CliContext): void {
  cron
    .command("trigger <id>")
    .description("run a job now, outside its schedule (a run of its own, through the plugin chain)")
    .option("--payload <json>", "fire it as an event with this JSON object as its payload (trigger event)")
    .action(async (id: string, opts: { payload?: string }) => {
      const run = await ctx
        .client()
        .post<RunView>(jobPath(id, "/trigger"), jsonObject(opts.payload, "--payload") ?? {});
      ctx.print(run, () =>
        // A run over a budget is written Skipped at once: say so rather than "triggered".
        run.status === "Skipped"
          ? `run ${run.id} of cron job ${run.cronJobId} skipped: ${run.reason}`
          : `triggered run ${run.id} of cron job ${run.cronJobId}`,
      );
    });
}

function backfill(cron: Command, ctx: CliContext): void {
  cron
    .command("backfill <id>")
    .description("run the job's slots of a past range through the plugin chain, each once (trigger backfill)")
    .requiredOption("--from <iso>", "first instant of the range (ISO 8601 with offset), inclusive")
    .requiredOption("--to <iso>", "end of the range, exclusive; not in the future")
    .option(
      "--max <n>",
      `refuse a range with more slots than this (default ${BACKFILL_DEFAULT_MAX}, at most ${BACKFILL_HARD_MAX})`,
      positiveInt,
    )
    .option("--dry-run", "list the slots and what would happen; write nothing")
    .action(async (id: string, opts: { from: string; to: string; max?: number; dryRun?: boolean }) => {
      const result = await ctx.client().post<BackfillView>(jobPath(id, "/backfill"), {
        from: opts.from,
        to: opts.to,
        ...(opts.max !== undefined ? { max: opts.max } : {}),
        dryRun: Boolean(opts.dryRun),
      });
      ctx.print(result, () => backfillText(result));
    });
}

function backfillText(result: BackfillView): string {
  if (result.slots.length === 0) return `no slot of cron job ${result.jobId} in [${result.from}, ${result.to})`;
  const counts = new Map<string, number>();
  for (const s of result.slots) counts.set(s.outcome, (counts.get(s.outcome) ?? 0) + 1);
  const runs = result.slots.filter((s) => s.outcome === "started" || s.outcome === "queued").length;
  const head = result.dryRun
    ? `dry run: ${runs} of ${result.slots.length} slot(s) would run; nothing written`
    : [...counts].map(([outcome, n]) => `${n} ${outcome}`).join(", ");
  const rows = result.slots.map((s) => [
    s.scheduledFor,
    result.dryRun && s.outcome === "queued" ? "would run" : s.outcome,
    s.runId ?? "",
    s.status ?? "",
  ]);
  return `${head}\n${table(["SLOT", "OUTCOME", "RUN", "STATUS"], rows)}`;
}

function skip(cron: Command, ctx: CliContext): void {
  cron
    .command("skip <id>")
    .description("skip the job's next slots: each is recorded Skipped with the reason when it comes")
    .option("--count <n>", "the next n slots (0 cancels)", nonNegativeInt)
    .option("--until <iso>", "every slot before this instant")
    .option("--reason <text>", "why (recorded on each Skipped run)")
    .option("--cancel", "cancel the skip request")
    .action(async (id: string, opts: { count?: number; until?: string; reason?: string; cancel?: boolean }) => {
      const given = [opts.count !== undefined, opts.until !== undefined, Boolean(opts.cancel)].filter(Boolean);
      if (given.length !== 1) throw new UsageError("give exactly one of --count, --until or --cancel");
      const job = await ctx.client().post<JobView>(jobPath(id, "/skip"), {
        ...(opts.count !== undefined ? { count: opts.count } : {}),
        ...(opts.until !== undefined ? { until: opts.until } : {}),
        ...(opts.cancel ? { cancel: true } : {}),
        ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
      });
      ctx.print(job, () => skipText(job));
    });
}

/** "the next 2 slot(s) (why)" or "every slot before T (why)". */
function skipSummary(skip: NonNullable<JobView["skip"]>): string {
  const what = skip.until ? `every slot before ${skip.until}` : `the next ${skip.remaining} slot(s)`;
  return `${what}${skip.reason ? ` (${skip.reason})` : ""}`;
}

function skipText(job: JobView): string {
  if (!job.skip) return `cron job ${job.id} "${job.name}" skips nothing; next fire ${job.nextFireAt ?? "never"}`;
  return `cron job ${job.id} "${job.name}" skips ${skipSummary(job.skip)}`;
}

function remove(cron: Command, ctx: CliContext): void {
  cron
    .command("rm <id>")
    .description("remove a cron job (its run history is kept)")
    .option("--force", "remove a job a jobs file manages (its next apply adds it back unless removed there)")
    .action(async (id: string, opts: { force?: boolean }) => {
      await ctx.client().delete(jobPath(id, opts.force ? "?force=true" : ""));
      ctx.print({ removed: id }, () => `removed cron job ${id}`);
    });
}

/** A flag's JSON object, or undefined when the flag is absent. */
function jsonObject(text: string | undefined, flag: string): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${flag}: not JSON (${(err as Error).message})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new UsageError(`${flag}: must be a JSON object`);
  return value as Record<string, unknown>;
}

function preview(cron: Command, ctx: CliContext): void {
  cron
    .command("preview <schedule>")
    .description('next fire times of a cron expression or "every 30m" (computed locally, no daemon needed)')
    .option("--tz <zone>", "IANA time zone", "UTC")
    .option("-n, --count <n>", "how many", "10")
    .option("--prompt <template>", "also render this prompt template for the first time (an example run)")
    .option("--payload <json>", "with --prompt: the example event's payload (a JSON object)")
    .action(async (expr: string, opts: { tz: string; count: string; prompt?: string; payload?: string }) => {
      const count = Number(opts.count);
      if (!Number.isInteger(count) || count < 1 || count > 1000)
        throw new UsageError("--count must be an integer from 1 to 1000");
      const now = new Date();
      let schedule: Schedule;
      if (/^every\s/i.test(expr)) schedule = { kind: "every", everyMs: parseEvery(expr), anchor: now };
      else {
        assertCron(expr, opts.tz);
        schedule = { kind: "cron", expr, timezone: opts.tz };
      }
      const slots = previewSlots(schedule, now, count);
      const times = slots.map((d) => d.toISOString());
      if (opts.prompt === undefined) return ctx.print(times, () => times.join("\n"));
      const payload = jsonObject(opts.payload, "--payload");
      const prompt = previewPrompt(opts.prompt, { slot: slots[0] ?? now, timezone: opts.tz, payload });
      ctx.print({ fireTimes: times, prompt }, () => `${times.join("\n")}\n\nprompt at ${times[0] ?? "-"}:\n${prompt}`);
    });
}
