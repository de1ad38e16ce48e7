import { InvalidArgumentError, Option, type Command } from "commander";
import type { RevisionView } from "../../cron/revisions.ts";
import type { JobView } from "../../cron/views.ts";
import { CATCHUP_POLICIES, JOB_KINDS, OVERLAP_POLICIES } from "../../db/schema/enums.ts";
import { positiveInt, type CliContext } from "../context.ts";
import { shorten, table } from "../format.ts";

const jobPath = (id: string, action = "") => `/v1/cron-jobs/${encodeURIComponent(id)}${action}`;

/** `none` clears an optional setting (sent as null). */
const orNone = (value: string) => (value === "none" ? null : value);
const countOrNone = (value: string) => (value === "none" ? null : positiveInt(value));
const catchupMax = (value: string) => {
  const n = positiveInt(value);
  if (n > 1000) throw new InvalidArgumentError("must be at most 1000");
  return n;
};

interface EditOptions {
  name?: string;
  agent?: string;
  prompt?: string;
  cron?: string;
  every?: string;
  tz?: string;
  kind?: string;
  overlap?: string;
  catchup?: string;
  catchupMax?: number;
  session?: string | null;
  freshSession?: boolean;
  activeHours?: string | null;
  skipIfBusy?: boolean;
  jitter?: string | null;
  startsAt?: string | null;
  endsAt?: string | null;
  maxRuns?: number | null;
  force?: boolean;
}

/** `missiond cron edit ID …` and `missiond cron history ID`. */
export function registerCronEdit(cron: Command, ctx: CliContext): void {
  cron
    .command("edit <id>")
    .description("change a job in place (its id, runs and history stay; the next fire is recomputed)")
    .option("--name <name>", "rename it")
    .option("--agent <id>", "target agent")
    .option("--prompt <text>", "the mission's prompt")
    .option("--cron <expr>", "replace the schedule by this cron expression")
    .option("--every <duration>", "replace the schedule by this interval (anchored at the edit)")
    .option("--tz <zone>", "IANA time zone for --cron")
    .addOption(new Option("--kind <kind>", "job kind").choices(JOB_KINDS))
    .addOption(new Option("--overlap <policy>", "when the previous run is still going").choices(OVERLAP_POLICIES))
    .addOption(new Option("--catchup <policy>", "after downtime").choices(CATCHUP_POLICIES))
    .option("--catchup-max <n>", "most late slots run by catch-up policy all", catchupMax)
    .option("--session <id>", "run every mission in this fixed session")
    .option("--fresh-session", "a fresh session per run again")
    .option("--active-hours <from-to>", 'only fire within these local hours, e.g. "09:00-18:00"; "none" clears', orNone)
    .option("--skip-if-busy", "skip a slot while the agent's session already has a mission running")
    .option("--no-skip-if-busy", "fire even while the agent's session is busy")
    .option("--jitter <duration>", 'spread the slots by up to this; "none" clears', orNone)
    .option("--starts-at <iso>", 'no slot before this instant; "none" clears', orNone)
    .option("--ends-at <iso>", 'no slot after this instant; "none" clears', orNone)
    .option("--max-runs <n>", 'stop after this many runs; "none" clears', countOrNone)
    .option("--force", "edit a job a jobs file manages (its next apply reports the drift)")
    .action(async (id: string, opts: EditOptions) => {
      const job = await ctx.client().patch<JobView>(jobPath(id), editBody(opts));
      ctx.print(job, () => `edited cron job ${job.id} "${job.name}"; next fire ${job.nextFireAt ?? "never"}`);
    });

  cron
    .command("history <id>")
    .description("a job's revisions: who changed what, when (oldest first)")
    .action(async (id: string) => {
      const { revisions } = await ctx.client().get<{ revisions: RevisionView[] }>(jobPath(id, "/revisions"));
      ctx.print(revisions, () =>
        table(
          ["REV", "AT", "ACTOR", "ACTION", "CHANGES", "NOTE"],
          revisions.map((r) => [r.revision, r.at, r.actor, r.action, changesText(r), shorten(r.note, 60)]),
        ),
      );
    });
}

/** The API's field names; only the options given are sent. */
function editBody(opts: EditOptions): Record<string, unknown> {
  const body: Record<string, unknown> = {
    name: opts.name,
    agentId: opts.agent,
    prompt: opts.prompt,
    cron: opts.cron,
    every: opts.every,
    timezone: opts.tz,
    kind: opts.kind,
    overlapPolicy: opts.overlap,
    catchupPolicy: opts.catchup,
    catchupMax: opts.catchupMax,
    activeHours: opts.activeHours,
    skipIfBusy: opts.skipIfBusy,
    jitter: opts.jitter,
    startsAt: opts.startsAt,
    endsAt: opts.endsAt,
    maxRuns: opts.maxRuns,
    force: opts.force,
  };
  if (opts.session !== undefined) body.sessionId = opts.session;
  if (opts.freshSession) body.sessionMode = "fresh";
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
}

const shown = (value: unknown) => (value === null ? "-" : typeof value === "string" ? value : JSON.stringify(value));

/** `field: before → after` per changed field; a create lists what it set. */
function changesText(revision: RevisionView): string {
  if (revision.action === "create")
    return shorten(
      `created ${revision.after?.cron ? `cron ${shown(revision.after.cron)}` : `every ${shown(revision.after?.every)}`}`,
      100,
    )!;
  if (revision.changes.length === 0) return "-";
  return revision.changes
    .map((c) => `${c.field}: ${shorten(shown(c.before), 30)} → ${shorten(shown(c.after), 30)}`)
    .join("; ");
}
