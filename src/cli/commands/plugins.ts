import { Option, type Command } from "commander";
import { grantSummary } from "../../plugins/grants.ts";
import { HOOK_NAMES } from "../../plugins/hooks.ts";
import type { ReloadReport } from "../../daemon/reload.ts";
import type { PluginInfo } from "../../plugins/service.ts";
import type { CliContext } from "../context.ts";
import { registerApprove } from "./plugin-approve.ts";
import { registerInstall } from "./plugin-install.ts";
import { registerSwitches } from "./plugin-switches.ts";
import { shorten, table } from "../format.ts";
import { EXIT } from "../io.ts";

/** `missiond plugins …`: the plugin chain and its decision log. */
export function registerPlugins(program: Command, ctx: CliContext): void {
  const plugins = program.command("plugins").description("the plugin chain");
  list(plugins, ctx);
  registerInstall(plugins, ctx);
  registerApprove(plugins, ctx);
  registerSwitches(plugins, ctx);
  reload(plugins, ctx);
  decisions(plugins, ctx);
}

function list(plugins: Command, ctx: CliContext): void {
  plugins
    .command("ls")
    .description("list plugins in chain order, with their hooks and state")
    .action(async () => {
      const { plugins: list } = await ctx.client().get<{ plugins: PluginInfo[] }>("/v1/plugins");
      ctx.print(list, () =>
        table(
          ["POS", "NAME", "KIND", "ORDER", "STATE", "HOOKS", "FLAGS", "GRANTS", "ERROR"],
          list.map((p) => [
            p.position ?? "-",
            p.name,
            p.kind,
            p.order,
            p.state,
            p.hooks.join(",") || "-",
            [
              p.needsApproval && "needs approval",
              p.changed && !p.needsApproval && "changed",
              p.required && "required",
              p.shadow && "shadow",
              p.section && `section:${p.section}`,
            ]
              .filter(Boolean)
              .join(",") || "-",
            grantSummary(p.grants),
            shorten(p.error, 80),
          ]),
        ),
      );
    });
}

function reload(plugins: Command, ctx: CliContext): void {
  plugins
    .command("reload")
    .description("load the plugin folders anew and swap the chain; running chains finish on the old set")
    .action(async () => {
      const report = await ctx.client().post<ReloadReport>("/v1/plugins/reload", {});
      ctx.print(report, () => describeReload(report));
      if (report.failed.length > 0 || report.hookErrors.length > 0) ctx.setExit(EXIT.ERROR);
    });
}

/** The reload answer for a person: the generation, the chain in order, what did not load. */
export function describeReload(report: ReloadReport): string {
  const lines = [`generation ${report.generation}: ${report.loaded.length} loaded, ${report.failed.length} failed`];
  if (report.loaded.length > 0)
    lines.push(
      table(
        ["POS", "NAME", "VERSION", "ORDER", "HOOKS"],
        report.loaded.map((p) => [p.position, p.name, p.version, p.order, p.hooks.join(",") || "-"]),
      ),
    );
  for (const f of report.failed) lines.push(`failed: ${f.error}`);
  // Absent from a daemon older than [plugin.<name>] sections.
  for (const w of report.warnings ?? []) lines.push(`warning: ${w}`);
  for (const h of report.hookErrors) lines.push(`reload hook ${h.hook} failed: ${h.error}`);
  return lines.join("\n");
}

interface DecisionView {
  id: string;
  at: string;
  plugin: string;
  hook: string;
  subjectId: string | null;
  durationMs: number;
  outcome: string;
  fields: string[] | null;
  reason: string | null;
  shadow: boolean;
  generation: number | null;
}

function decisions(plugins: Command, ctx: CliContext): void {
  plugins
    .command("decisions")
    .description("the decision log: what each handler that ran decided, newest first")
    .addOption(new Option("--hook <hook>", "only this hook").choices(HOOK_NAMES))
    .option("--plugin <name>", "only this plugin")
    .option("--subject <id>", "only decisions about this run, timer or session")
    .option("--limit <n>", "at most this many", "50")
    .action(async (opts: { hook?: string; plugin?: string; subject?: string; limit: string }) => {
      const result = await ctx
        .client()
        .get<{ decisions: DecisionView[]; counts: Record<string, number> }>("/v1/hook-decisions", {
          hook: opts.hook,
          plugin: opts.plugin,
          subject: opts.subject,
          limit: opts.limit,
        });
      ctx.print(result, () =>
        [
          table(
            ["ID", "AT", "PLUGIN", "GEN", "HOOK", "SUBJECT", "MS", "OUTCOME", "DETAIL"],
            result.decisions.map((d) => [
              d.id,
              d.at,
              d.plugin,
              d.generation ?? "-",
              d.hook,
              d.subjectId,
              d.durationMs,
              d.shadow ? `${d.outcome} (shadow)` : d.outcome,
              shorten(d.fields?.join(",") ?? d.reason, 70),
            ]),
          ),
          "",
          Object.entries(result.counts)
            .map(([k, v]) => `${k} ${v}`)
            .join(" · "),
        ].join("\n"),
      );
    });
}
