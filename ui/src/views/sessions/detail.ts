import { api, type Timer, type Todo } from "../../api.ts";
import { h } from "../../dom.ts";
import { dateTime } from "../../time.ts";
import { badge, empty, panel } from "../../widgets.ts";

interface Message {
  id: string;
  role: string;
  text: string;
  createdAt: string;
}
interface SessionEvent {
  id: string;
  kind: string;
  at: string;
  data: unknown;
}

/** One session's transcript, todos, notify timers and clears: every call agent-scoped, as its runtime may read them. */
export async function sessionDetail(id: string): Promise<HTMLElement> {
  const path = `/v1/sessions/${encodeURIComponent(id)}`;
  const [{ messages }, { todos }, { timers }, { events }] = await Promise.all([
    api.get<{ messages: Message[] }>(`${path}/messages`, { limit: 100 }),
    api.get<{ todos: Todo[] }>(`${path}/todos`, { status: "all" }),
    api.get<{ timers: Timer[] }>("/v1/notify", { session: id, limit: 50 }),
    api.get<{ events: SessionEvent[] }>("/v1/events", { session: id, kind: "sessionCleared", limit: 100 }),
  ]);
  return panel(
    `Session ${id}`,
    h("a", { href: "#/sessions" }, "← all sessions"),
    h("div", { class: "session-detail", "data-testid": "session-detail" }, [
      h("h3", null, `Transcript (${messages.length}${messages.length === 100 ? "+" : ""})`),
      messages.length
        ? h(
            "ol",
            { class: "transcript", "data-testid": "transcript" },
            ...messages.map((m) =>
              h(
                "li",
                { "data-role": m.role },
                h("span", { class: "muted small" }, `${dateTime(m.createdAt)} · ${m.role}`),
                h("pre", { class: "block" }, m.text),
              ),
            ),
          )
        : empty("no messages"),
      h("h3", null, "Todos"),
      todos.length
        ? h("ul", { "data-testid": "session-todos" }, ...todos.map((t) => h("li", null, badge(t.status), " ", t.text)))
        : empty("no todos"),
      h("h3", null, "Notify timers"),
      timers.length
        ? h(
            "ul",
            { "data-testid": "session-timers" },
            ...timers.map((t) =>
              h(
                "li",
                null,
                badge(t.status),
                ` ${t.message ?? t.requestedMessage}`,
                h("span", { class: "muted" }, t.dueAt ? ` · due ${dateTime(t.dueAt)}` : ""),
              ),
            ),
          )
        : empty("no timers"),
      h("h3", null, "Clears"),
      events.length
        ? h(
            "ul",
            { "data-testid": "session-clears" },
            ...events.map((e) => h("li", null, `cleared at ${dateTime(e.at)}`)),
          )
        : empty("never cleared"),
    ]),
  );
}
