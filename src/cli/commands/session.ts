import type { Command } from "commander";
import { MESSAGE_ROLES } from "../../db/schema/enums.ts";
import type { ClearView } from "../../sessions/clears.ts";
import type { MessageView } from "../../sessions/service.ts";
import { choiceOption, positiveInt, type CliContext } from "../context.ts";
import { shorten, table } from "../format.ts";

/** `missiond session …`: agent sessions as the runtime reports them. */
export function registerSession(program: Command, ctx: CliContext): void {
  const session = program.command("session").description("agent sessions as the runtime reports them");
  add(session, ctx);
  list(session, ctx);
  clear(session, ctx);
  remove(session, ctx);
  events(session, ctx);
  say(session, ctx);
  messages(session, ctx);
}

function add(session: Command, ctx: CliContext): void {
  session
    .command("add")
    .description("register a session")
    .requiredOption("--agent <id>", "the agent it belongs to")
    .option("--id <id>", "its id (default: a new UUID)")
    .option("--kind <kind>", "snake_case kind, e.g. direct or channel", "direct")
    .action(async (opts: { agent: string; id?: string; kind: string }) => {
      const created = await ctx.client().post<{ id: string }>("/v1/sessions", {
        id: opts.id,
        agentId: opts.agent,
        kind: opts.kind,
      });
      ctx.print(created, () => `added session ${created.id}`);
    });
}

interface SessionRow {
  id: string;
  agentId: string;
  kind: string;
  messageCount: number;
  subagentCount: number;
  peerThreadCount: number;
  updatedAt: string;
}

function list(session: Command, ctx: CliContext): void {
  session
    .command("ls")
    .description("list sessions, most recently active first")
    .action(async () => {
      const { sessions } = await ctx.client().get<{ sessions: SessionRow[] }>("/v1/sessions");
      ctx.print(sessions, () =>
        table(
          ["ID", "AGENT", "KIND", "MESSAGES", "SUBAGENTS", "PEERS", "UPDATED"],
          sessions.map((s) => [
            s.id,
            s.agentId,
            s.kind,
            s.messageCount,
            s.subagentCount,
            s.peerThreadCount,
            s.updatedAt,
          ]),
        ),
      );
    });
}

function clear(session: Command, ctx: CliContext): void {
  session
    .command("clear <id>")
    .description(
      "/new: delete the session's transcript, direct subagents and peer threads (durable; resumed after a crash)",
    )
    .option("--text <text>", "the trailing text typed after /new")
    .action(async (id: string, opts: { text?: string }) => {
      const done = await ctx
        .client()
        .post<ClearView>(
          `/v1/sessions/${encodeURIComponent(id)}/clear`,
          opts.text !== undefined ? { trailingText: opts.text } : {},
        );
      ctx.print(
        done,
        () =>
          `cleared session ${done.sessionId} (clear ${done.id}): deleted ${done.deletedMessageCount} messages, ${done.deletedSubagentCount} subagents, ${done.deletedPeerThreadCount} peer threads`,
      );
    });
}

function remove(session: Command, ctx: CliContext): void {
  session
    .command("rm <id>")
    .description(
      "remove a session: its transcript is deleted, its timers, todos, clears and events stay on record; refused while timers, todos or cron jobs are bound to it",
    )
    .option("--force", "cancel its pending notify timers and open todos instead of refusing")
    .action(async (id: string, opts: { force?: boolean }) => {
      await ctx.client().delete(`/v1/sessions/${encodeURIComponent(id)}${opts.force ? "?force=true" : ""}`);
      ctx.print({ removed: id, forced: opts.force === true }, () => `removed session ${id}`);
    });
}

interface EventPage {
  events: { id: string; kind: string; sessionId: string; at: string; data: Record<string, unknown> }[];
  next: string;
}

function events(session: Command, ctx: CliContext): void {
  session
    .command("events")
    .description("durable session events (sessionCleared, sessionRemoved) after a cursor, oldest first")
    .option("--after <id>", "the cursor: the last event id already seen", "0")
    .option("--session <id>", "only this session's events")
    .option("--limit <n>", "at most this many", positiveInt, 100)
    .action(async (opts: { after: string; session?: string; limit: number }) => {
      const page = await ctx.client().get<EventPage>("/v1/events", {
        after: opts.after,
        session: opts.session,
        limit: opts.limit,
      });
      ctx.print(page, () =>
        [
          table(
            ["ID", "AT", "KIND", "SESSION", "DATA"],
            page.events.map((e) => [e.id, e.at, e.kind, e.sessionId, shorten(JSON.stringify(e.data), 80)]),
          ),
          `next cursor: ${page.next}`,
        ].join("\n"),
      );
    });
}

function say(session: Command, ctx: CliContext): void {
  session
    .command("say <id> <text>")
    .description("append a message to the session's transcript (from the user unless --role says otherwise)")
    .addOption(choiceOption("--role <role>", "who says it", MESSAGE_ROLES).default("user"))
    .action(async (id: string, text: string, opts: { role: string }) => {
      const done = await ctx.client().post<{ appended: number }>(`/v1/sessions/${encodeURIComponent(id)}/messages`, {
        messages: [{ role: opts.role, text }],
      });
      ctx.print(done, () => `appended ${done.appended} ${opts.role} message to session ${id}`);
    });
}

function messages(session: Command, ctx: CliContext): void {
  session
    .command("messages <id>")
    .description("the session's transcript, oldest first")
    .option("--after <id>", "only messages after this message id")
    .option("--limit <n>", "at most this many", positiveInt, 100)
    .action(async (id: string, opts: { after?: string; limit: number }) => {
      const { messages: list } = await ctx
        .client()
        .get<{ messages: MessageView[] }>(`/v1/sessions/${encodeURIComponent(id)}/messages`, {
          after: opts.after,
          limit: opts.limit,
        });
      ctx.print(list, () =>
        table(
          ["ID", "AT", "ROLE", "TEXT"],
          list.map((m) => [m.id, m.createdAt, m.role, shorten(m.text.replace(/\s+/g, " "), 100)]),
        ),
      );
    });
}
