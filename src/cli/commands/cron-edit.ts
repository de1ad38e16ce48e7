import type { Command } from "commander";
import type { RevisionView } from "../../cron/revisions.ts";
import type { JobView } from "../../cron/views.ts";
import type { CliContext } from "../context.ts";
import { addJobFlags, asFlags, jobBody } from "./job-flags.ts";
import { shorten, table } from "../format.ts";

const jobPath = (id: string, action = "") => `/v1/cron-jobs/${encodeURIComponent(id)}${action}`;

/** `missiond cron edit ID …` and `missiond cron history ID`. */
export function registerCronEdit(cron: Command, ctx: CliContext): void {
  addJobFlags(
    cron
      .command("edit <id>")
      .description("change a job in place (its id, runs and history stay; the next fire is recomputed)"),
    "edit",
  )
    .option("--force", "edit a job a jobs file manages (its next apply reports the drift)")
    .action(async (id: string, opts: Record<string, unknown>) => {
      const body = { ...jobBody(opts, "edit"), ...(opts.force ? { force: true } : {}) };
      const job = await asFlags(ctx.client().patch<JobView>(jobPath(id), body));
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
