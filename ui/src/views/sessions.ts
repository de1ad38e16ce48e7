import { api, type Session, type Timer } from "../api.ts";
import { fill, h, plural } from "../dom.ts";
import type { View } from "../main.ts";
import { relative } from "../time.ts";
import { empty, panel } from "../widgets.ts";
import { pendingTimersTable } from "./now.ts";
import { sessionDetail } from "./sessions/detail.ts";

const TIMERS_PAGE = 50;

/**
 * What an agent runtime's token may read: its sessions and their pending notify timers. The
 * operator's views (jobs, runs, plugins, the doctor) answer 403 to such a token, so they are not shown.
 */
export function sessionsView(): View {
  const sessions = h("div", { "data-testid": "sessions" });
  const timers = h("div", { "data-testid": "pending-timers" });
  const timersSub = h("span");
  let seq = 0;
  let root: HTMLElement;
  let opened: string | null = null;
  let agent: string | null = null;

  async function refresh() {
    const mine = ++seq;
    if (opened) {
      const detail = await sessionDetail(opened);
      if (mine === seq) fill(root, detail);
      return;
    }
    const now = Date.now();
    const [list, pending] = await Promise.all([
      api.get<{ sessions: Session[] }>("/v1/sessions"),
      api.get<{ timers: Timer[] }>("/v1/notify", { status: "Pending", limit: TIMERS_PAGE }),
    ]);
    if (mine !== seq) return;
    fill(
      sessions,
      list.sessions.length
        ? h(
            "table",
            { class: "sessions" },
            h(
              "tbody",
              null,
              ...list.sessions
                .filter((s) => !agent || s.agentId === agent)
                .map((s) =>
                  h(
                    "tr",
                    { "data-session-id": s.id },
                    h(
                      "td",
                      null,
                      h("a", { href: `#/sessions?session=${encodeURIComponent(s.id)}` }, h("code", null, s.id)),
                    ),
                    h("td", null, `agent ${s.agentId}`),
                    h("td", null, plural(s.messageCount, "message")),
                    h("td", null, h("strong", null, plural(s.openTodos, "open todo"))),
                    h("td", { class: "muted small" }, `active ${relative(s.updatedAt, now)}`),
                  ),
                ),
            ),
          )
        : empty("No session yet."),
    );
    timersSub.textContent = pending.timers.length === TIMERS_PAGE ? `the ${TIMERS_PAGE} most recently set` : "";
    const byDue = [...pending.timers].sort((a, b) => Date.parse(a.dueAt ?? "") - Date.parse(b.dueAt ?? ""));
    fill(timers, pendingTimersTable(byDue, now));
  }

  return {
    mount(element, params) {
      root = element;
      opened = params.get("session");
      agent = params.get("agent");
      if (opened) return;
      fill(
        root,
        h(
          "div",
          { class: "grid" },
          panel(
            "Sessions",
            agent ? `of agent ${agent}, of the 100 most recently active` : "the 100 most recently active",
            sessions,
          ),
          panel("Pending notify timers", timersSub, timers),
        ),
      );
    },
    refresh,
  };
}
