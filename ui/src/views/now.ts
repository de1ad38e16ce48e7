import { api, type Doctor, type JobPage, type Session, type Timer, type Todo } from "../api.ts";
import { fill, h, plural } from "../dom.ts";
import type { Ctx, View } from "../main.ts";
import { dateTime, relative, scheduleInWords, span } from "../time.ts";
import { lastRunCell } from "./jobs.ts";
import { badge, empty, panel } from "../widgets.ts";

export const DUE_WINDOW_MS = 10 * 60_000;
export const DUE_PAGE = 50;

/** What is due in the next minutes, what is late, which notes wait and which sessions have work open. */
export function nowView(ctx: Ctx): View {
  const summary = h("div", { class: "summary", "data-testid": "summary" });
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
    const [doctor, soon, pending, list] = await Promise.all([
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

    const late = doctor.overdueJobs.length + doctor.overdueTimers.length;
    const other =
      doctor.stuckRuns.length +
      doctor.failingAgents.length +
      doctor.plugins.length +
      (doctor.schedulerArmed ? 0 : 1) +
      (Math.abs(doctor.clockSkewMs) > 1000 ? 1 : 0);
    fill(
      summary,
      h(
        "div",
        { class: `tile ${doctor.ok ? "good" : "bad"}` },
        h("strong", null, doctor.ok ? "All good" : "Needs a look"),
        h(
          "span",
          null,
          doctor.ok
            ? "nothing late, stuck, failing or misconfigured"
            : `${plural(late, "late item")}, ${plural(other, "other problem")}`,
        ),
      ),
      h("div", { class: "tile" }, h("strong", null, String(soon.total)), h("span", null, "jobs due in 10 min")),
      h(
        "div",
        { class: "tile" },
        h("strong", null, String(pending.timers.length === 50 ? "50+" : pending.timers.length)),
        h("span", null, "pending notify timers"),
      ),
      h(
        "div",
        { class: "tile" },
        h("strong", null, String(withTodos.length)),
        h("span", null, "sessions with open todos"),
      ),
      h(
        "div",
        { class: "tile" },
        h("strong", null, doctor.schedulerArmed ? "armed" : "not armed"),
        h("span", null, `scheduler · clock skew ${doctor.clockSkewMs} ms`),
      ),
    );

    dueSub.textContent = soon.total > soon.jobs.length ? `the first ${soon.jobs.length} of ${soon.total}` : "";
    fill(
      due,
      soon.jobs.length
        ? h(
            "table",
            { class: "due" },
            h(
              "tbody",
              null,
              ...soon.jobs.map((j) =>
                h(
                  "tr",
                  { "data-job-id": j.id },
                  h("td", { class: "when" }, relative(j.nextFireAt, now)),
                  h("td", null, jobLink(j.id, j.name), j.kind === "heartbeat" ? badge("heartbeat", "kind") : null),
                  h("td", { class: "muted" }, scheduleInWords(j)),
                  h("td", { class: "muted small" }, dateTime(j.nextFireAt, j.timezone)),
                  h("td", null, lastRunCell(j)),
                ),
              ),
            ),
          )
        : empty("Nothing is due in the next 10 minutes."),
    );

    fill(
      overdue,
      late
        ? h(
            "ul",
            { class: "late" },
            ...doctor.overdueJobs.map((j) =>
              h(
                "li",
                { "data-job-id": j.id },
                jobLink(j.id, j.name),
                ` should have fired at ${dateTime(j.nextFireAt)}; late by ${span(j.lateBySeconds * 1000)}`,
              ),
            ),
            ...doctor.overdueTimers.map((t) =>
              h("li", null, `notify timer ${t.id} for session ${t.sessionId} was due ${relative(t.dueAt, now)}`),
            ),
          )
        : empty("Nothing is overdue: every job and timer fired when it should have."),
    );

    const byDue = [...pending.timers].sort((a, b) => Date.parse(a.dueAt ?? "") - Date.parse(b.dueAt ?? ""));
    timersSub.textContent = pending.timers.length === 50 ? "the 50 most recently set" : "";
    fill(timers, pendingTimersTable(byDue, now));

    fill(
      sessions,
      withTodos.length
        ? h(
            "ul",
            { class: "sessions" },
            ...withTodos.map((s) => {
              const open = expanded.get(s.id);
              return h(
                "li",
                { "data-session-id": s.id },
                h(
                  "button",
                  {
                    type: "button",
                    class: "link",
                    "aria-expanded": expanded.has(s.id) ? "true" : "false",
                    onclick: () => void toggle(s.id),
                  },
                  h("code", null, s.id),
                ),
                ` · agent ${s.agentId} · `,
                h("strong", null, plural(s.openTodos, "open todo")),
                h("span", { class: "muted small" }, ` · active ${relative(s.updatedAt, now)}`),
                open ? h("ol", { class: "todos" }, ...open.map((t) => h("li", null, t.text))) : null,
              );
            }),
          )
        : empty("No session has open todos (of the 100 most recently active)."),
    );

    const items = [
      ...doctor.stuckRuns.map(
        (r) => `run ${r.id} of job ${r.cronJobId} ${r.status} since ${dateTime(r.since)} (${r.claimedBy})`,
      ),
      ...doctor.failingAgents.map(
        (a) =>
          `agent ${a.agentId}: ${plural(a.failures, "failed mission")} in 24 h, last ${a.lastStatus} ${relative(a.lastFailureAt, now)}`,
      ),
      ...doctor.plugins.map((p) => `plugin ${p.name} is ${p.state}${p.error ? `: ${p.error}` : ""}`),
      ...(doctor.schedulerArmed ? [] : ["the scheduler is not armed"]),
      ...(Math.abs(doctor.clockSkewMs) > 1000 ? [`clock skew against the database: ${doctor.clockSkewMs} ms`] : []),
    ];
    problems.closest("section")?.toggleAttribute("hidden", items.length === 0);
    fill(problems, h("ul", { class: "late" }, ...items.map((t) => h("li", null, t))));
  }

  return {
    mount(root) {
      fill(
        root,
        summary,
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
