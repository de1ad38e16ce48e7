import { api, type AlertList, type Doctor, type JobPage, type Session, type Timer, type Todo } from "../api.ts";
import { fill, h } from "../dom.ts";
import type { Ctx, View } from "../main.ts";
import { dateTime, relative } from "../time.ts";
import { empty, panel } from "../widgets.ts";
import { alertList, dueTable, overdueList, problemLines, summaryTiles, todoSessions } from "./now/panels.ts";

export const DUE_WINDOW_MS = 10 * 60_000;
export const DUE_PAGE = 50;

/** What is due in the next minutes, what is late, which notes wait and which sessions have work open. */
export function nowView(ctx: Ctx): View {
  const summary = h("div", { class: "summary", "data-testid": "summary" });
  const alerts = h("div", { "data-testid": "open-alerts" });
  const due = h("div", { "data-testid": "due-soon" });
  const dueSub = h("span");
  const overdue = h("div", { "data-testid": "overdue" });
  const timers = h("div", { "data-testid": "pending-timers" });
  const timersSub = h("span");
  const sessions = h("div", { "data-testid": "open-todos" });
  const problems = h("div", { "data-testid": "problems" });
  const expanded = new Map<string, Todo[] | null>();
  let seq = 0;

  const jobLink = (id: string, name: string) =>
    h("button", { type: "button", class: "link", onclick: () => ctx.go("jobs", { job: id, q: name }) }, name);

  async function toggle(sessionId: string) {
    if (expanded.has(sessionId)) expanded.delete(sessionId);
    else expanded.set(sessionId, null);
    await refresh().catch(ctx.fail);
  }

  async function refresh() {
    const mine = ++seq;
    const now = Date.now();
    const [open, doctor, soon, pending, list] = await Promise.all([
      api.get<AlertList>("/v1/alerts", { open: "true", limit: 20 }),
      api.get<Doctor>("/v1/doctor"),
      api.get<JobPage>("/v1/cron-jobs", { dueBefore: new Date(now + DUE_WINDOW_MS).toISOString(), limit: DUE_PAGE }),
      api.get<{ timers: Timer[] }>("/v1/notify", { status: "Pending", limit: 50 }),
      api.get<{ sessions: Session[] }>("/v1/sessions"),
    ]);
    const withTodos = list.sessions.filter((s) => s.openTodos > 0);
    const todos = await Promise.all(
      withTodos
        .filter((s) => expanded.has(s.id))
        .map(
          async (s) =>
            [
              s.id,
              (await api.get<{ todos: Todo[] }>(`/v1/sessions/${encodeURIComponent(s.id)}/todos`, { limit: 50 })).todos,
            ] as const,
        ),
    );
    if (mine !== seq) return;
    for (const [id, list] of todos) expanded.set(id, list);

    fill(summary, ...summaryTiles(doctor, soon, pending.timers, withTodos));
    // Open alerts first, and only when there are any.
    alerts.closest("section")?.toggleAttribute("hidden", open.alerts.length === 0);
    fill(alerts, alertList(open.alerts, now, jobLink));
    dueSub.textContent = soon.total > soon.jobs.length ? `the first ${soon.jobs.length} of ${soon.total}` : "";
    fill(due, dueTable(soon, now, jobLink));
    fill(overdue, overdueList(doctor, now, jobLink));

    const byDue = [...pending.timers].sort((a, b) => Date.parse(a.dueAt ?? "") - Date.parse(b.dueAt ?? ""));
    timersSub.textContent = pending.timers.length === 50 ? "the 50 most recently set" : "";
    fill(timers, pendingTimersTable(byDue, now));
    fill(
      sessions,
      todoSessions(withTodos, expanded, now, (id) => void toggle(id)),
    );

    const items = problemLines(doctor, now);
    problems.closest("section")?.toggleAttribute("hidden", items.length === 0);
    fill(problems, h("ul", { class: "late" }, ...items.map((t) => h("li", null, t))));
  }

  return {
    mount(root) {
      fill(
        root,
        summary,
        panel("Open alerts", "missiond alerts ls --open", alerts),
        h(
          "div",
          { class: "grid" },
          panel("Due in the next 10 minutes", dueSub, due),
          panel("Overdue", "should have fired but did not", overdue),
          panel("Pending notify timers", timersSub, timers),
          panel("Sessions with open todos", null, sessions),
          panel("Other problems", "from missiond doctor", problems),
        ),
      );
    },
    refresh,
  };
}

/** Pending notify timers, soonest first (the Now view, and an agent runtime's Sessions view). */
export function pendingTimersTable(byDue: readonly Timer[], now: number): Node {
  return byDue.length
    ? h(
        "table",
        { class: "timers" },
        h(
          "tbody",
          null,
          ...byDue.map((t) =>
            h(
              "tr",
              { "data-timer-id": t.id },
              h("td", { class: "when" }, relative(t.dueAt, now)),
              h("td", null, h("code", null, t.sessionId)),
              h("td", { class: "message" }, t.message),
              h("td", { class: "muted small" }, dateTime(t.dueAt)),
            ),
          ),
        ),
      )
    : empty("No notify timer is pending.");
}
