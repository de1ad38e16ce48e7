import { CLOSED_RUN_STATUSES, RUN_STATUSES, type RunStatus } from "../../../../src/db/schema/enums.ts";
import type { Timeline } from "../../api.ts";
import { h, plural } from "../../dom.ts";
import { clock, dateTime, span } from "../../time.ts";
import { empty, statusChip } from "../../widgets.ts";

type Lane = Timeline["lanes"][number];

/** What a click on the timeline asks for. */
export interface TimelineActions {
  /** One job's runs in one column's time. */
  pickCell(lane: Lane, from: number, to: number): void;
  /** One job's runs. */
  pickJob(lane: Lane): void;
}

/** Runs per column, per status, and the fullest column's total (the height of a full bar). */
function columnCounts(lane: Lane) {
  const totals = new Map<number, Map<RunStatus, number>>();
  for (const [i, status, n] of lane.cells) (totals.get(i) ?? totals.set(i, new Map()).get(i)!).set(status, n);
  let max = 1;
  for (const m of totals.values())
    max = Math.max(
      max,
      [...m.values()].reduce((a, b) => a + b, 0),
    );
  return { totals, max };
}

/** One column of a lane: a bar stacked by status, sized against the lane's fullest column. */
function cell(lane: Lane, t: Timeline, i: number, counts: Map<RunStatus, number>, max: number, act: TimelineActions) {
  const start = Date.parse(t.from) + i * t.bucketMs;
  const label = `${clock(start)}–${clock(start + t.bucketMs)}: ${[...counts].map(([s, n]) => `${n} ${s}`).join(", ")}`;
  const sum = [...counts.values()].reduce((a, b) => a + b, 0);
  return h(
    "button",
    {
      type: "button",
      class: "cell filled",
      title: label,
      "aria-label": `${lane.name} ${label}`,
      onclick: () => act.pickCell(lane, start, start + t.bucketMs),
    },
    h(
      "span",
      { class: "stack", style: { height: `${Math.max(12, (sum / max) * 100)}%` } },
      ...RUN_STATUSES.filter((s) => counts.has(s)).map((s) =>
        h("span", { class: `seg status-${s}`, style: { height: `${(counts.get(s)! / sum) * 100}%` } }),
      ),
    ),
  );
}

/** A change to the job (edit, pause…): a thin mark at its moment, described in its tooltip. */
function revisionMarker(r: Lane["revisions"][number], t: Timeline) {
  const from = Date.parse(t.from);
  const left = ((Date.parse(r.at) - from) / (Date.parse(t.to) - from)) * 100;
  const title = `revision ${r.revision}: ${r.action} by ${r.actor} at ${dateTime(r.at)}${r.note ? ` (${r.note})` : ""}`;
  return h("span", { class: "revision-mark", title, role: "img", "aria-label": title, style: { left: `${left}%` } });
}

/** One job's row: its name, a column per bucket and its revisions, and its total in range. */
function lane(l: Lane, t: Timeline, act: TimelineActions) {
  const { totals, max } = columnCounts(l);
  const columns = Array.from({ length: t.buckets }, (_, i) => {
    const counts = totals.get(i);
    return counts ? cell(l, t, i, counts, max, act) : h("div", { class: "cell" });
  });
  return h(
    "div",
    { class: "lane", "data-job-id": l.jobId },
    h(
      "button",
      {
        type: "button",
        class: "link lane-name",
        title: `${l.name}: ${plural(l.total, "run")} in range`,
        onclick: () => act.pickJob(l),
      },
      l.name,
      l.removed ? h("span", { class: "muted" }, " (removed)") : null,
    ),
    h("div", { class: "cells" }, ...columns, ...l.revisions.map((r) => revisionMarker(r, t))),
    h("span", { class: "lane-total muted small" }, l.total.toLocaleString("en-US")),
  );
}

/** The timeline's lanes with their time axis (or a note that the range has no runs), then the legend. */
export function timelineBody(t: Timeline, act: TimelineActions) {
  const from = Date.parse(t.from);
  const to = Date.parse(t.to);
  return [
    t.lanes.length
      ? [
          ...t.lanes.map((l) => lane(l, t, act)),
          h(
            "div",
            { class: "axis" },
            h("span", null, dateTime(t.from)),
            h("span", null, clock((from + to) / 2)),
            h("span", null, dateTime(t.to)),
          ),
        ]
      : empty("No runs in this range."),
    h(
      "div",
      { class: "legend" },
      ...CLOSED_RUN_STATUSES.map((s) => statusChip(s)),
      h("span", { class: "muted small" }, ` · one column = ${span(t.bucketMs)}`),
    ),
  ];
}
