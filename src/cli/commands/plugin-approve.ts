import type { Command } from "commander";
import type { ReloadReport } from "../../daemon/reload.ts";
import type { ApprovalAnswer } from "../../plugins/consented-load.ts";
import { grantSummary } from "../../plugins/grants.ts";
import { UsageError, type CliContext } from "../context.ts";
import { EXIT } from "../io.ts";
import { describeReload } from "./plugins.ts";

/**
 * `missiond plugins approve NAME`: shows what the plugin's folder asks for now against what was
 * approved (as install shows its grants), asks, and records the approval under the caller's name;
 * the daemon then reloads, so the plugin runs with what was approved.
 */
export function registerApprove(plugins: Command, ctx: CliContext): void {
  plugins
    .command("approve")
    .description("review a plugin's changed grants or code and approve them (then reload)")
    .argument("<name>", "the plugin's name, as `plugins ls` shows it")
    .option("-y, --yes", "approve without asking (required when not at a terminal)")
    .action(async (name: string, opts: { yes?: boolean }) => {
      const client = ctx.client();
      const url = `/v1/plugins/${encodeURIComponent(name)}/approve`;
      const preview = await client.post<ApprovalAnswer>(url, { dryRun: true });
      if (!preview.pending) {
        ctx.print(preview, () => `plugin ${name} has nothing waiting for approval`);
        return;
      }
      if (!ctx.globals().json) ctx.io.stdout(`${describe(preview)}\n`);
      if (!opts.yes) {
        if (!ctx.io.stdinIsTty || !ctx.io.confirm)
          throw new UsageError("not at a terminal to confirm: pass --yes to approve what is shown above");
        if (!(await ctx.io.confirm(`Approve ${name} as shown? [y/N] `))) {
          ctx.io.stderr("missiond: not approved\n");
          ctx.setExit(EXIT.ERROR);
          return;
        }
      }
      const answer = await client.post<ApprovalAnswer & { reload: ReloadReport }>(url, { digest: preview.digest });
      ctx.print(answer, () =>
        [
          `approved ${name} (revision ${answer.approved!.revision}, by ${answer.approved!.actor})`,
          describeReload(answer.reload),
        ].join("\n"),
      );
      if (answer.reload.failed.length > 0 || answer.reload.hookErrors.length > 0) ctx.setExit(EXIT.ERROR);
    });
}

function describe(preview: ApprovalAnswer): string {
  const before = preview.previous;
  return [
    `plugin     ${preview.name}`,
    `folder     ${preview.dir}`,
    `approved   ${before ? `${grantSummary(before.grants)} (revision ${before.revision}, ${before.source} by ${before.actor} at ${before.at})` : "never"}`,
    `asks for   ${grantSummary(preview.grants)}`,
    `added      ${preview.added.join(", ") || "-"}`,
    `code       ${preview.changed ? `changed (${before?.digest ?? "none"} -> ${preview.digest})` : "unchanged"}`,
  ].join("\n");
}
