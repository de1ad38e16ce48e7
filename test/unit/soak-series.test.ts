/**
 * The soak's samples file (bench/soak.json): lateness reduced to one p99 per sample for the chart,
 * and each backend's verdicts and read-path timings kept as judged on the full samples.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadSeries, saveSeries, type Series } from "../../bench/soak/chart.ts";
import { soakSample } from "../helpers/soak.ts";
import { tempDir } from "../helpers/tmp.ts";

const sample = (t: number, lateness: number[]) =>
  soakSample(t, { claimLateness: lateness, doneLateness: lateness.map((ms) => ms + 5), claims: lateness.length });

describe("the soak's samples file", () => {
  it("keeps the verdicts and read paths beside the samples, lateness reduced to its p99", () => {
    const lateness = Array.from({ length: 100 }, (_, i) => i + 1);
    const series: Series[] = [
      {
        backend: "postgres",
        samples: [sample(0, []), sample(20, lateness)],
        verdicts: [{ criterion: "RSS flat", figures: "150.0 → 151.0 MB (+1.0)", pass: true }],
        queries: [{ name: "runs ls (GET /v1/runs?limit=50)", p50: 12.5, max: 20.1 }],
      },
    ];
    const path = join(tempDir("soak-series"), "soak.json");
    saveSeries(series, path);
    const [saved] = loadSeries(path);
    expect(saved!.verdicts).toEqual(series[0]!.verdicts);
    expect(saved!.queries).toEqual(series[0]!.queries);
    expect(saved!.samples.map((s) => s.claimLateness)).toEqual([[], [99]]);
    expect(saved!.samples[1]!.doneLateness).toEqual([104]);
    expect(saved!.samples[1]!.rssMb).toBe(150);
  });
});
