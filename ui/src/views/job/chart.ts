import { CLOSED_RUN_STATUSES } from "../../../../src/db/schema/enums.ts";
import type { Run } from "../../api.ts";
import type { GetRunSummaryAnswer } from "../../api-types.ts";
import { h } from "../../dom.ts";

const SVG = "http://www.w3.org/2000/svg";
const W = 420;
const H = 80;

function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text) el.textContent = text;
  return el;
}

/** One day's counts per status, as GET /v1/run-summary answers them (ledger rows and pruned runs' rollups). */
export type DayCounts = Pick<GetRunSummaryAnswer["summary"][number], "status" | "count">[];

/** Per day: runs that ended and the share that succeeded (null when none ended). */
export function successRates(days: DayCounts[]): { total: number; rate: number | null }[] {
  return days.map((rows) => {
    let ok = 0;
    let total = 0;
    for (const { status, count } of rows) {
      if (!CLOSED_RUN_STATUSES.includes(status)) continue;
      total += count;
      if (status === "Succeeded") ok += count;
    }
    return { total, rate: total ? ok / total : null };
  });
}

/** Success rate per day as bars (a gap where nothing ended), drawn inline: no chart library, no CDN. */
export function successChart(days: DayCounts[]) {
  const rates = successRates(days);
  const width = W / rates.length;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "data-testid": "success-chart" });
  const ended = rates.reduce((s, r) => s + r.total, 0);
  const ok = rates.reduce((s, r) => s + (r.rate ?? 0) * r.total, 0);
  root.setAttribute(
    "aria-label",
    ended ? `success rate ${Math.round((100 * ok) / ended)}% over ${ended} runs` : "no runs ended",
  );
  rates.forEach((r, i) => {
    if (r.rate === null) return;
    const height = Math.max(2, r.rate * (H - 4));
    const bar = svg("rect", {
      x: i * width + 1,
      y: H - height,
      width: Math.max(1, width - 2),
      height,
      class: r.rate < 1 ? "bar bad" : "bar",
    });
    bar.append(svg("title", {}, `${Math.round(r.rate * 100)}% of ${r.total}`));
    root.append(bar);
  });
  return h(
    "figure",
    { class: "chart-box" },
    root as unknown as HTMLElement,
    h("figcaption", { class: "muted small" }, "Success rate per day (UTC), last 14 days, pruned runs included"),
  );
}

/** The lateness the agent saw (slot → delivery) of the latest runs, oldest left, as a line. */
export function latenessChart(runs: Run[]) {
  const values = runs
    .filter((r) => r.deliveryLatenessMs !== null)
    .map((r) => r.deliveryLatenessMs!)
    .reverse();
  if (values.length < 2) return null;
  const top = Math.max(...values, 1);
  const points = values.map((v, i) => `${(i * W) / (values.length - 1)},${H - 2 - (v / top) * (H - 4)}`).join(" ");
  const root = svg("svg", {
    viewBox: `0 0 ${W} ${H}`,
    class: "chart",
    role: "img",
    "aria-label": `lateness up to ${top} ms`,
    "data-testid": "lateness-chart",
  });
  root.append(svg("polyline", { points, class: "line" }));
  return h(
    "figure",
    { class: "chart-box" },
    root as unknown as HTMLElement,
    h("figcaption", { class: "muted small" }, `Lateness of the latest ${values.length} runs (max ${top} ms)`),
  );
}
