import type { Command } from "commander";
import type { RunView } from "../../cron/views.ts";
import type { CliContext } from "../context.ts";
import { fields } from "../format.ts";

const decided = (run: RunView) =>
  fields({ run: run.id, status: run.status, reason: run.reason, "approved by": run.approvedBy }, 11);

/** `runs approve` and `runs reject`: an operator's decision on a run waiting AwaitingApproval. */
export function registerDecisions(runs: Command, ctx: CliContext): void {
  runs
    .command("approve <id>")
    .description("approve a run waiting for approval: its mission goes out now (you are recorded)")
    .action(async (id: string) => {
      const run = await ctx.client().post<RunView>(`/v1/runs/${encodeURIComponent(id)}/approve`, {});
      ctx.print(run, () => decided(run));
    });
  runs
    .command("reject <id>")
    .description("reject a run waiting for approval: it is Cancelled with you and the reason")
    .option("--reason <text>", "why (recorded in the run's reason)")
    .action(async (id: string, opts: { reason?: string }) => {
      const body = opts.reason === undefined ? {} : { reason: opts.reason };
      const run = await ctx.client().post<RunView>(`/v1/runs/${encodeURIComponent(id)}/reject`, body);
      ctx.print(run, () => decided(run));
    });
}
