import type { Command } from "commander";
import type { AlertView } from "../../alerts/service.ts";
import { ALERT_KINDS } from "../../db/schema/enums.ts";
import type { CliContext } from "../context.ts";
import { table } from "../format.ts";

/** `missiond alerts …`: what failed, went silent or paused itself, and acknowledging it. */
export function registerAlerts(program: Command, ctx: CliContext): void {
  const alerts = program
    .command("alerts")
    .description(
      "alerts: failing, missed, silent or self-paused jobs; failing agents, plugins down, an unarmed scheduler, doctor findings",
    );
  alerts
    .command("ls")
    .description("list alerts, newest first")
    .option("--open", "only alerts not resolved")
    .option("--kind <kind>", `only alerts of this kind (${ALERT_KINDS.join(", ")})`)
    .option("--subject <subject>", "only alerts about this subject, as listed (job:12, agent:ops-bot, scheduler@host)")
    .option("--limit <n>", "at most this many", "50")
    .action(async (opts: { open?: boolean; kind?: string; subject?: string; limit: string }) => {
      const query: Record<string, string> = { limit: opts.limit };
      if (opts.open) query.open = "true";
      if (opts.kind !== undefined) query.kind = opts.kind;
      if (opts.subject !== undefined) query.subject = opts.subject;
      const { alerts: found } = await ctx.client().get<{ alerts: AlertView[] }>("/v1/alerts", query);
      ctx.print(found, () =>
        found.length === 0
          ? opts.open
            ? "no open alerts"
            : "no alerts"
          : table(
              ["ID", "STATE", "SEVERITY", "KIND", "SUBJECT", "OPENED", "SENT", "SUMMARY"],
              found.map((a) => [
                a.id,
                a.resolvedAt ? "resolved" : a.ackedAt ? `acked by ${a.ackedBy}` : "open",
                a.severity,
                a.kind,
                // A job by its name; anything else by its subject (agent:…, plugin:…@host, doctor:…).
                a.jobName ?? a.subject,
                a.openedAt,
                sentSummary(a),
                a.summary,
              ]),
            ),
      );
    });
  alerts
    .command("ack <id>")
    .description("acknowledge an alert: someone is on it (it still resolves by itself)")
    .action(async (id: string) => {
      const acked = await ctx.client().post<AlertView>(`/v1/alerts/${encodeURIComponent(id)}/ack`, {});
      ctx.print(acked, () => `alert ${acked.id} acknowledged by ${acked.ackedBy}: ${acked.summary}`);
    });
}

/** `2/3` sent of the notifications, with a `!` when one was given up. */
function sentSummary(a: AlertView): string {
  const sent = a.notifications.filter((n) => n.status === "sent").length;
  const failed = a.notifications.some((n) => n.status === "failed");
  return `${sent}/${a.notifications.length}${failed ? "!" : ""}`;
}
