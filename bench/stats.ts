/** Percentiles by nearest rank over a copy of the samples. */
export function summarize(samples: readonly number[]): {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
} {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN;
  return { n: sorted.length, p50: at(50), p90: at(90), p99: at(99), max: sorted.at(-1) ?? NaN };
}

export function printTable(headers: string[], rows: (string | number)[][]): void {
  const cells = rows.map((r) =>
    r.map((c) => (typeof c === "number" ? (Number.isInteger(c) ? String(c) : c.toFixed(1)) : c)),
  );
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  console.log(line(headers));
  console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
  for (const r of cells) console.log(line(r));
}
