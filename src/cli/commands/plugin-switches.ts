import type { Command } from "commander";
import type { ReloadReport } from "../../daemon/reload.ts";
import { UsageError, type CliContext } from "../context.ts";
import { EXIT } from "../io.ts";
import { describeReload } from "./plugins.ts";

interface SwitchAnswer {
  name: string;
  state: "disabled" | "enabled";
  reload: ReloadReport;
}
interface RemoveAnswer {
  name: string;
  dir: string;
  approvalsRemoved: number;
  reload: ReloadReport;
}

/** `missiond plugins disable|enable|rm NAME`: each applied by a reload the daemon runs at once. */
export function registerSwitches(plugins: Command, ctx: CliContext): void {
  for (const verb of ["disable", "enable"] as const) {
    plugins
      .command(verb)
      .description(
        verb === "disable"
          ? "take a plugin out of the chain (even a required one) until enabled; kept across restarts"
          : "put a disabled plugin back in the chain",
      )
      .argument("<name>", "the plugin's name, as `plugins ls` shows it")
      .action(async (name: string) => {
        const answer = await ctx.client().post<SwitchAnswer>(`/v1/plugins/${encodeURIComponent(name)}/${verb}`, {});
        ctx.print(answer, () => [`${answer.state} ${answer.name}`, describeReload(answer.reload)].join("\n"));
        reloadExit(ctx, answer.reload);
      });
  }
  plugins
    .command("rm")
    .description("remove a plugin: delete its folder and its approvals, then reload (its host.store keys stay)")
    .argument("<name>", "the plugin's name, as `plugins ls` shows it")
    .option("-y, --yes", "remove without asking (required when not at a terminal)")
    .action(async (name: string, opts: { yes?: boolean }) => {
      if (!opts.yes) {
        if (!ctx.io.stdinIsTty || !ctx.io.confirm)
          throw new UsageError(`not at a terminal to confirm: pass --yes to remove plugin ${name} and its files`);
        if (!(await ctx.io.confirm(`Remove plugin ${name}, its folder and its approvals? [y/N] `))) {
          ctx.io.stderr("missiond: not removed\n");
          ctx.setExit(EXIT.ERROR);
          return;
        }
      }
      const answer = await ctx.client().delete<RemoveAnswer>(`/v1/plugins/${encodeURIComponent(name)}`);
      ctx.print(answer, () =>
        [
          `removed ${answer.name} (${answer.dir}; ${answer.approvalsRemoved} approval revision${answer.approvalsRemoved === 1 ? "" : "s"})`,
          describeReload(answer.reload),
        ].join("\n"),
      );
      reloadExit(ctx, answer.reload);
    });
}

const reloadExit = (ctx: CliContext, reload: ReloadReport) => {
  if (reload.failed.length > 0 || reload.hookErrors.length > 0) ctx.setExit(EXIT.ERROR);
};
