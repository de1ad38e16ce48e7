import { api, type Instances } from "../../api.ts";
import { fill, h } from "../../dom.ts";
import type { View } from "../../main.ts";
import { dateTime, relative } from "../../time.ts";
import { badge, empty, panel } from "../../widgets.ts";

type Instance = Instances["instances"][number];

const HEADERS = [
  "Instance",
  "State",
  "Version",
  "Host (pid)",
  "Started",
  "Last heartbeat",
  "Claims / min",
  "Deliveries / min",
];

const stateBadge = (i: Instance) =>
  badge(i.state, i.state === "running" ? "active" : i.state === "vanished" ? "state-failed" : "state-disabled");

function row(i: Instance, now: number) {
  return h(
    "tr",
    { "data-instance": i.name, "data-state": i.state },
    h("td", null, h("code", null, i.name)),
    h(
      "td",
      null,
      stateBadge(i),
      i.state === "vanished" ? h("div", { class: "muted small" }, "no heartbeat, no clean stop") : null,
    ),
    h("td", null, i.version),
    h("td", null, `${i.host}${i.pid !== null ? ` (${i.pid})` : ""}`),
    h("td", { title: i.startedAt }, dateTime(i.startedAt)),
    h("td", { title: i.heartbeatAt }, relative(i.heartbeatAt, now)),
    h("td", { class: "num" }, i.state === "running" ? String(i.claimsLastMinute) : "—"),
    h("td", { class: "num" }, i.state === "running" ? String(i.deliveriesLastMinute) : "—"),
  );
}

/** Every daemon on the database, from the heartbeats they write (GET /v1/instances). */
export function instancesView(): View {
  const box = h("div", { class: "table-wrap", "data-testid": "instances" });
  const sub = h("span");
  return {
    mount(root) {
      fill(root, panel("Instances", sub, box));
    },
    async refresh() {
      const now = Date.now();
      const { instances } = await api.get<Instances>("/v1/instances");
      const vanished = instances.filter((i) => i.state === "vanished").length;
      sub.textContent = `${instances.filter((i) => i.state === "running").length} running${vanished ? `, ${vanished} vanished` : ""}`;
      fill(
        box,
        instances.length
          ? h(
              "table",
              { class: "instances" },
              h("thead", null, h("tr", null, ...HEADERS.map((t) => h("th", { scope: "col" }, t)))),
              h("tbody", null, ...instances.map((i) => row(i, now))),
            )
          : empty("No instance has written a heartbeat yet."),
      );
    },
  };
}
