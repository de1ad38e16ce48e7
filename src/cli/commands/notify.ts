import type { Command } from "commander";
import { NOTIFY_STATUSES } from "../../db/schema/enums.ts";
import { parseDuration } from "../../duration.ts";
import type { TimerView } from "../../notify/views.ts";
import { choiceOption, positiveInt, UsageError, type CliContext } from "../context.ts";
import { fields, shorten, table } from "../format.ts";

/** `missiond notify …`: the command itself sets a timer; its subcommands inspect and cancel. */
export function registerNotify(program: Command, ctx: CliContext): void {
  const notify = program
    .command("notify")
    .description("set a timer that wakes a session's agent with a note (notify_session_in)")
    .option("--session <id>", "the session to wake")
    .option("--in <duration>", "delay, e.g. 90s, 10m, 2h")
    .option("--message <text>", "the note the agent receives")
    .action(async (opts: { session?: string; in?: string; message?: string }) => {
      // Not requiredOption: that would demand them of `notify ls` too.
      if (!opts.session || !opts.in || opts.message === undefined)
        throw new UsageError("notify needs --session, --in and --message");
      const ms = parseDuration(opts.in);
      if (ms === null) throw new UsageError(`--in: not a duration: "${opts.in}" (use e.g. 90s, 10m, 2h)`);
      const timer = await ctx.client().post<TimerView>("/v1/notify", {
        sessionId: opts.session,
        message: opts.message,
        delaySeconds: ms / 1000,
      });
      ctx.print(timer, () =>
        timer.status === "Cancelled"
          ? `notify ${timer.id} cancelled by ${timer.decidedBy}: ${timer.reason}`
          : `notify ${timer.id} set for ${timer.dueAt} (in ${timer.delaySeconds}s${timer.delaySeconds !== timer.requestedDelaySeconds ? `, asked ${timer.requestedDelaySeconds}s` : ""})`,
      );
    });
  list(notify, ctx);
  show(notify, ctx);
  cancel(notify, ctx);
}

function list(notify: Command, ctx: CliContext): void {
  notify
    .command("ls")
    .description("list notify timers, newest first")
    .option("--session <id>", "only this session's timers")
    .addOption(choiceOption("--status <status>", "only timers with this status", NOTIFY_STATUSES))
    .option("--limit <n>", "at most this many", positiveInt, 50)
    .action(async (opts: { session?: string; status?: string; limit: number }) => {
      const { timers } = await ctx.client().get<{ timers: TimerView[] }>("/v1/notify", {
        session: opts.session,
        status: opts.status,
        limit: opts.limit,
      });
      ctx.print(timers, () =>
        table(
          ["ID", "SESSION", "DUE AT", "STATUS", "LATE MS", "BY", "MESSAGE / REASON"],
          timers.map((t) => [
            t.id,
            t.sessionId,
            t.dueAt,
            t.status,
            t.latenessMs,
            t.decidedBy ?? t.claimedBy,
            shorten(t.reason ?? t.messageDelivered ?? t.message, 60),
          ]),
        ),
      );
    });
}

function show(notify: Command, ctx: CliContext): void {
  notify
    .command("show <id>")
    .description("show one notify timer")
    .action(async (id: string) => {
      const timer = await ctx.client().get<TimerView>(`/v1/notify/${encodeURIComponent(id)}`);
      ctx.print(timer, () => fields(timer, 22));
    });
}

function cancel(notify: Command, ctx: CliContext): void {
  notify
    .command("cancel <id>")
    .description("cancel a timer that has not come due")
    .action(async (id: string) => {
      const timer = await ctx.client().post<TimerView>(`/v1/notify/${encodeURIComponent(id)}/cancel`, {});
      ctx.print(timer, () => `cancelled notify ${timer.id}`);
    });
}
