/**
 * The soak's verdicts, each over windows scaled to the run's length (a 30-minute run: the plateau
 * over the last 15 minutes, lateness in the first and last 5): the database size on a plateau,
 * lateness at the end like at the start, memory flat, and the read paths fast at the end.
 */
import { printTable, summarize } from "../stats.ts";
import { MAPPING_KINDS } from "./mappings.ts";
import type { Sample } from "./sample.ts";

export interface QueryTiming {
  name: string;
  p50: number;
  max: number;
}

export interface Verdict {
  criterion: string;
  figures: string;
  pass: boolean;
}

const median = (values: number[]) => summarize(values).p50;
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/** Samples whose time falls in [from, to) of the run, as fractions of its length. */
function window(samples: Sample[], runS: number, from: number, to: number): Sample[] {
  return samples.filter((s) => s.t >= from * runS && s.t < to * runS + 1e-9);
}

export function verdicts(samples: Sample[], runS: number, queries: QueryTiming[]): Verdict[] {
  const out: Verdict[] = [];
  const lastHalf = window(samples, runS, 0.5, 1);
  const sizes = lastHalf.map((s) => s.dbBytes);
  const mean = sizes.reduce((a, b) => a + b, 0) / sizes.length;
  const spread = Math.max(...sizes.map((s) => Math.abs(s - mean) / mean));
  out.push({
    criterion: "database size on a plateau over the last half (every sample within ±10% of its mean)",
    figures: `mean ${mb(mean)} MB, min ${mb(Math.min(...sizes))}, max ${mb(Math.max(...sizes))}, furthest ${(spread * 100).toFixed(1)}% from the mean; at the start of that half ${mb(sizes[0]!)} MB, at the end ${mb(sizes.at(-1)!)} MB`,
    pass: spread <= 0.1,
  });
  const wal = lastHalf.map((s) => s.walBytes);
  if (wal.some((w) => w > 0)) {
    const tables = lastHalf.map((s) => s.dbBytes - s.walBytes);
    out.at(-1)!.figures +=
      `; of which WAL ${mb(wal[0]!)} → ${mb(wal.at(-1)!)} MB, the rest (tables) ${mb(tables[0]!)} → ${mb(tables.at(-1)!)} MB`;
  }
  const first = window(samples, runS, 0, 1 / 6);
  const last = window(samples, runS, 5 / 6, 1);
  for (const [name, pick] of [
    ["fire lateness (slot → mission started) p99", (s: Sample) => s.claimLateness],
    ["end to end (slot → executor done, run closed) p99", (s: Sample) => s.doneLateness],
  ] as const) {
    const a = summarize(first.flatMap(pick));
    const b = summarize(last.flatMap(pick));
    out.push({
      criterion: `${name}: last sixth within 20% of the first sixth`,
      figures: `first ${a.p99} ms (p50 ${a.p50}, n ${a.n}), last ${b.p99} ms (p50 ${b.p50}, n ${b.n}): ${b.p99 >= a.p99 ? "+" : ""}${(((b.p99 - a.p99) / a.p99) * 100).toFixed(0)}%`,
      pass: b.p99 <= a.p99 * 1.2,
    });
  }
  const rss = flat("RSS", first, last, samples, (s) => s.rssMb, median, "median");
  // Whether it is still climbing at the end, or was warming up: the same medians over the last half.
  const halves = [window(samples, runS, 0.5, 0.75), window(samples, runS, 0.75, 1)].map((w) =>
    median(w.map((s) => s.rssMb)),
  );
  rss.figures += `; median of the third quarter ${halves[0]!.toFixed(1)} → of the last quarter ${halves[1]!.toFixed(1)} MB`;
  // The first sixth of a 30-minute run with 5-minute retention ends before the first prune pass:
  // the second sixth is the first with the whole workload (pruning and its vacuums) running.
  const second = median(window(samples, runS, 1 / 6, 2 / 6).map((s) => s.rssMb));
  rss.figures += `; second sixth (the whole workload running) ${second.toFixed(1)} → last sixth ${median(last.map((s) => s.rssMb)).toFixed(1)} MB`;
  out.push(rss);
  // The heap used swings with every collection (30–120 MB under this load), and a full collection
  // comes only every 5–10 minutes, so a sixth's lowest sample may fall after none. What a leak
  // raises is what each full collection leaves: the daemon's live heap, the latest at each sample.
  // Runs saved before the daemon reported it judge the lowest sample, as they did.
  const live = samples.some((s) => Number.isFinite(s.heapLiveMb));
  out.push(
    live
      ? flat(
          "V8 heap live (after the latest full collection)",
          first,
          last,
          samples,
          (s) => s.heapLiveMb ?? NaN,
          (v) => median(v.filter(Number.isFinite)),
          "median",
        )
      : flat(
          "V8 heap used",
          first,
          last,
          samples,
          (s) => s.heapUsedMb,
          (v) => Math.min(...v),
          "floor (lowest sample)",
        ),
  );
  if (live) out.at(-1)!.figures += `; heap used (every sample) ${floors(first, last)}`;
  const slowest = queries.reduce((a, b) => (b.p50 > a.p50 ? b : a));
  out.push({
    criterion: "`runs ls` and the dashboard's queries under 50 ms at the end (median of 5 each)",
    figures: `slowest ${slowest.name} ${slowest.p50.toFixed(1)} ms`,
    pass: queries.every((q) => q.p50 < 50),
  });
  return out;
}

/** The heap used's lowest sample and median of each sixth, shown beside the live heap. */
function floors(first: Sample[], last: Sample[]): string {
  const low = (w: Sample[]) => Math.min(...w.map((s) => s.heapUsedMb)).toFixed(1);
  const mid = (w: Sample[]) => median(w.map((s) => s.heapUsedMb)).toFixed(1);
  return `lowest ${low(first)} → ${low(last)}, medians ${mid(first)} → ${mid(last)} MB`;
}

function flat(
  name: string,
  first: Sample[],
  last: Sample[],
  samples: Sample[],
  pick: (s: Sample) => number,
  measure: (values: number[]) => number,
  measureName: string,
): Verdict {
  const a = measure(first.map(pick));
  const b = measure(last.map(pick));
  const seen = samples.map(pick).filter(Number.isFinite);
  const medians = `medians ${median(first.map(pick)).toFixed(1)} → ${median(last.map(pick)).toFixed(1)}`;
  return {
    criterion: `${name} flat: ${measureName} of the last sixth under 5 MB above the first sixth's`,
    figures: `${a.toFixed(1)} → ${b.toFixed(1)} MB (${b - a >= 0 ? "+" : ""}${(b - a).toFixed(1)}); ${measureName === "median" ? "" : `${medians}; `}range over the run ${Math.min(...seen).toFixed(1)}–${Math.max(...seen).toFixed(1)} MB`,
    pass: b - a < 5,
  };
}

export function printBackend(backend: string, samples: Sample[], runS: number, queries: QueryTiming[]): Verdict[] {
  const list = verdicts(samples, runS, queries);
  console.log(`\n### ${backend}\n`);
  printTable(
    ["criterion", "figures", "result"],
    list.map((v) => [v.criterion, v.figures, v.pass ? "PASS" : "FAIL"]),
  );
  console.log("\nRead paths at the end (ms over the socket, 5 calls after one warm-up):\n");
  printTable(
    ["query", "p50", "max"],
    queries.map((q) => [q.name, q.p50, q.max]),
  );
  const [first, last] = [window(samples, runS, 0, 1 / 6), window(samples, runS, 5 / 6, 1)];
  if (first.concat(last).every((s) => s.rssByMapping)) {
    console.log("\nRSS by kind of mapping (bench/soak/mappings.ts), medians of the first and last sixth, MB:\n");
    const at = (w: Sample[], kind: (typeof MAPPING_KINDS)[number]) => median(w.map((s) => s.rssByMapping![kind]));
    printTable(
      ["mappings", "first sixth", "last sixth", "change"],
      MAPPING_KINDS.map((kind) => [
        kind,
        at(first, kind).toFixed(1),
        at(last, kind).toFixed(1),
        (at(last, kind) - at(first, kind)).toFixed(1),
      ]),
    );
  }
  const end = samples.at(-1)!;
  console.log(
    "\nRows at the end:",
    Object.entries(end.rows)
      .map(([t, n]) => `${t} ${n}`)
      .join(", "),
  );
  return list;
}
