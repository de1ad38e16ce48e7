/**
 * The soak's chart: four panels over time (database size, ledger rows, lateness p99, RSS and
 * heap), one colour per backend, drawn as SVG and rendered to PNG by the chromium the dashboard
 * tests use (playwright-core, a dev dependency already).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { chromium } from "playwright-core";
import { summarize } from "../stats.ts";
import type { QueryTiming, Verdict } from "./report.ts";
import type { Sample } from "./sample.ts";

/** One backend's run; the verdicts and read-path timings are saved with the samples they judged. */
export interface Series {
  backend: string;
  samples: Sample[];
  verdicts?: Verdict[];
  queries?: QueryTiming[];
  /** Seconds of load before the measured minutes (the verdicts judge the samples after it). */
  warmupS?: number;
}

interface Line {
  backend: string;
  dashed: boolean;
  points: [number, number][];
}

const COLOURS: Record<string, string> = { pglite: "#1f77b4", postgres: "#d62728" };
const W = 560;
const H = 300;
const PAD = { left: 70, right: 15, top: 34, bottom: 36 };

const fmt = (v: number) => (Math.abs(v) >= 1000 ? `${Math.round(v / 100) / 10}k` : String(Math.round(v * 10) / 10));

function panel(
  title: string,
  unit: string,
  lines: Line[],
  [x0, y0, warmupS]: [number, number, number],
  log = false,
): string {
  const all = lines.flatMap((l) => l.points).filter(([, y]) => Number.isFinite(y) && (!log || y > 0));
  const maxT = Math.max(1, ...all.map(([t]) => t));
  const ys = all.map(([, y]) => y);
  let lo = log ? Math.max(1, Math.min(...ys)) : 0;
  let hi = Math.max(...ys, 1);
  if (log) [lo, hi] = [10 ** Math.floor(Math.log10(lo)), 10 ** Math.ceil(Math.log10(hi))];
  else hi *= 1.1;
  const px = (t: number) => x0 + PAD.left + (t / maxT) * (W - PAD.left - PAD.right);
  const scale = (y: number) => (log ? (Math.log10(y) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) : y / hi);
  const py = (y: number) => y0 + H - PAD.bottom - scale(y) * (H - PAD.top - PAD.bottom);
  const ticks = log
    ? Array.from({ length: Math.round(Math.log10(hi / lo)) + 1 }, (_, i) => lo * 10 ** i)
    : [0, 0.25, 0.5, 0.75, 1].map((f) => (f * hi) / 1.1);
  const out = [`<text x="${x0 + W / 2}" y="${y0 + 20}" class="title">${title} (${unit})</text>`];
  for (const tick of ticks)
    out.push(
      `<line x1="${px(0)}" x2="${px(maxT)}" y1="${py(tick)}" y2="${py(tick)}" class="grid"/>`,
      `<text x="${px(0) - 6}" y="${py(tick) + 4}" class="ytick">${fmt(tick)}</text>`,
    );
  for (let m = 0; m <= maxT / 60; m += Math.max(1, Math.ceil(maxT / 60 / 8)))
    out.push(`<text x="${px(m * 60)}" y="${y0 + H - PAD.bottom + 16}" class="xtick">${m} min</text>`);
  if (warmupS > 0)
    out.push(
      `<line x1="${px(warmupS)}" x2="${px(warmupS)}" y1="${y0 + PAD.top}" y2="${y0 + H - PAD.bottom}" class="warmup"/>`,
      `<text x="${px(warmupS) + 4}" y="${y0 + PAD.top + 10}" class="ytick" style="text-anchor: start">warm-up ends</text>`,
    );
  for (const line of lines) {
    const d = line.points
      .filter(([, y]) => Number.isFinite(y) && (!log || y > 0))
      .map(([t, y], i) => `${i ? "L" : "M"}${px(t).toFixed(1)},${py(y).toFixed(1)}`)
      .join(" ");
    out.push(
      `<path d="${d}" fill="none" stroke="${COLOURS[line.backend] ?? "#333"}" stroke-width="1.8"${line.dashed ? ' stroke-dasharray="5,4"' : ""}/>`,
    );
  }
  return out.join("\n");
}

export function chartSvg(series: Series[], subtitle: string): string {
  const lines = (pick: (s: Sample) => number, dashed = false) =>
    series.map((s) => ({
      backend: s.backend,
      dashed,
      points: s.samples.map((x) => [x.t, pick(x)] as [number, number]),
    }));
  const totalRows = (s: Sample) => Object.values(s.rows).reduce((a, b) => a + b, 0);
  const p99 = (values: number[]) => summarize(values).p99;
  const warm = Math.max(0, ...series.map((s) => s.warmupS ?? 0));
  const legend = series
    .map(
      (s, i) =>
        `<rect x="${20 + i * 130}" y="${2 * H + 46}" width="18" height="4" fill="${COLOURS[s.backend] ?? "#333"}"/><text x="${44 + i * 130}" y="${2 * H + 52}" class="legend">${s.backend}</text>`,
    )
    .join("\n");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" height="${2 * H + 90}" viewBox="0 0 ${2 * W} ${2 * H + 90}">
<style>
  text { font: 12px sans-serif; fill: #222; }
  .title { font-weight: bold; text-anchor: middle; font-size: 13px; }
  .ytick { text-anchor: end; font-size: 11px; fill: #555; }
  .xtick { text-anchor: middle; font-size: 11px; fill: #555; }
  .grid { stroke: #e3e3e3; }
  .legend { font-size: 12px; }
  .warmup { stroke: #888; stroke-dasharray: 2,3; }
</style>
<rect width="100%" height="100%" fill="white"/>
${panel(
  "Database size",
  "MB",
  lines((s) => s.dbBytes / 1024 / 1024),
  [0, 0, warm],
)}
${panel("Ledger rows: all tables solid, cron_job_runs dashed", "rows", [...lines(totalRows), ...lines((s) => s.rows.cron_job_runs ?? NaN, true)], [W, 0, warm])}
${panel("Lateness p99 per sample: slot → mission started solid, → run closed dashed", "ms, log", [...lines((s) => p99(s.claimLateness)), ...lines((s) => p99(s.doneLateness), true)], [0, H, warm], true)}
${panel("Daemon memory: RSS solid, V8 heap used dashed", "MB", [...lines((s) => s.rssMb), ...lines((s) => s.heapUsedMb, true)], [W, H, warm])}
${legend}
<text x="${20 + series.length * 130}" y="${2 * H + 52}" class="legend">${subtitle}</text>
</svg>`;
}

export async function writeChartPng(svg: string, path: string): Promise<void> {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium" });
  try {
    const page = await browser.newPage({ viewport: { width: 2 * W, height: 2 * H + 90 } });
    await page.setContent(`<html><body style="margin:0">${svg}</body></html>`);
    writeFileSync(path, await page.locator("svg").screenshot());
  } finally {
    await browser.close();
  }
}

/**
 * The samples as the chart needs them (lateness reduced to its p99), with the verdicts and read
 * paths as judged on the full samples, written after each backend so a chart can be redrawn
 * (`SOAK_REPLOT`) and the verdicts read even when the run's PNG or output is lost.
 */
export function saveSeries(series: Series[], path: string): void {
  const compact = series.map((s) => ({
    ...s,
    samples: s.samples.map((x) => ({
      ...x,
      claimLateness: x.claimLateness.length ? [summarize(x.claimLateness).p99] : [],
      doneLateness: x.doneLateness.length ? [summarize(x.doneLateness).p99] : [],
    })),
  }));
  writeFileSync(path, JSON.stringify(compact));
}

export function loadSeries(path: string): Series[] {
  return JSON.parse(readFileSync(path, "utf8")) as Series[];
}
