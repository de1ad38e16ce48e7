import type { Command } from "commander";
import type { RunView } from "../../cron/views.ts";
import { RUN_STATUSES } from "../../db/schema/enums.ts";
import { choiceOption, type CliContext } from "../context.ts";
import { shorten, table } from "../format.ts";

/** `missiond runs ls`: the run ledger. */
export function registerRuns(program: Command, ctx: CliContext): void {
  const runs = program.command("runs").description("the run ledger");
  runs
    .command("ls")
    .description("list runs, newest slot first")
    .option("--job <id>", "only this job's runs")
    .addOption(choiceOption("--status <status>", "only runs with this status", RUN_STATUSES))
    .option("--limit <n>", "at most this many", "50")
    .action(async (opts: { job?: string; status?: string; limit: string }) => {
      const { runs: list } = await ctx.client().get<{ runs: (RunView & { revision: number | null })[] }>("/v1/runs", {
        jobId: opts.job,
        status: opts.status,
        limit: opts.limit,
      });
      ctx.print(list, () =>
        table(
          ["ID", "JOB", "SCHEDULED FOR", "TRIGGER", "REVISION", "STATUS", "LATE MS", "BY", "REASON"],
          list.map((r) => [
            r.id,
            r.cronJobId,
            r.scheduledFor,
            r.trigger,
            r.revision,
            r.status,
            r.latenessMs,
            r.decidedBy ?? r.claimedBy,
            shorten(r.reason, 80),
          ]),
        ),
      );
    });
}
