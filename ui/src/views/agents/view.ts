import { api, type AgentActivity, type Agents } from "../../api.ts";
import { fill, h } from "../../dom.ts";
import type { View } from "../../main.ts";
import { span } from "../../time.ts";
import { empty, panel } from "../../widgets.ts";

type Activity = AgentActivity["agents"][number];

const HEADERS = [
  "Agent",
  "Executor",
  "Succeeded (24 h)",
  "Failed (24 h)",
  "Other (24 h)",
  "Lateness avg / max",
  "Sessions",
];

/** The executor's settings, secrets already replaced by "[set]" by the API. */
const settingsText = (settings: Record<string, unknown>) =>
  Object.entries(settings)
    .filter(([key]) => key !== "executor")
    .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`)
    .join(" · ");

function row(id: string, agent: Agents["agents"][number] | undefined, activity: Activity | undefined) {
  const ms = (v: number | null | undefined) => (v === null || v === undefined ? "—" : span(v));
  return h(
    "tr",
    { "data-agent": id },
    h(
      "td",
      null,
      h("code", null, id),
      agent
        ? h("div", { class: "muted small" }, `from the ${agent.source === "config" ? "config file" : "API"}`)
        : null,
    ),
    h(
      "td",
      null,
      agent ? h("strong", null, agent.executor) : h("span", { class: "muted" }, "the default executor"),
      agent ? h("div", { class: "muted small", "data-testid": "agent-settings" }, settingsText(agent.settings)) : null,
    ),
    h("td", { class: "num" }, String(activity?.succeeded ?? 0)),
    h("td", { class: `num${activity?.failed ? " bad" : ""}` }, String(activity?.failed ?? 0)),
    h("td", { class: "num" }, String(activity?.other ?? 0)),
    h("td", null, `${ms(activity?.averageLatenessMs)} / ${ms(activity?.maxLatenessMs)}`),
    h(
      "td",
      { class: "num" },
      activity?.sessions
        ? h("a", { href: `#/sessions?agent=${encodeURIComponent(id)}` }, String(activity.sessions))
        : "0",
    ),
  );
}

/** Each agent: its executor (secrets never shown), its runs of the last day, the lateness it saw, its sessions. */
export function agentsView(): View {
  const box = h("div", { class: "table-wrap", "data-testid": "agents" });
  return {
    mount(root) {
      fill(root, panel("Agents", "executors, and each agent's last 24 hours", box));
    },
    async refresh() {
      const [{ agents }, activity] = await Promise.all([
        api.get<Agents>("/v1/agents"),
        api.get<AgentActivity>("/v1/agent-activity"),
      ]);
      const byId = new Map(agents.map((a) => [a.id, a]));
      const seen = new Map(activity.agents.map((a) => [a.agentId, a]));
      const ids = [...new Set([...byId.keys(), ...seen.keys()])].sort();
      fill(
        box,
        ids.length
          ? h(
              "table",
              { class: "agents" },
              h("thead", null, h("tr", null, ...HEADERS.map((t) => h("th", { scope: "col" }, t)))),
              h("tbody", null, ...ids.map((id) => row(id, byId.get(id), seen.get(id)))),
            )
          : empty("No agent is configured, and none has runs or sessions."),
      );
    },
  };
}
