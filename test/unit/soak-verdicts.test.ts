/** The soak's heap verdict: judged on the live heap when the daemon reports it, else on the lowest sample. */
import { describe, expect, it } from "vitest";
import { verdicts } from "../../bench/soak/report.ts";
import type { Sample } from "../../bench/soak/sample.ts";
import { soakSample } from "../helpers/soak.ts";

const RUN_S = 600;

/** A sample every 20 s over the run, its heap figures given by the time. */
function run(heap: (t: number) => { used: number; live?: number }): Sample[] {
  return Array.from({ length: RUN_S / 20 + 1 }, (_, i) => {
    const t = i * 20;
    const { used, live } = heap(t);
    return soakSample(t, { heapUsedMb: used, ...(live === undefined ? {} : { heapLiveMb: live }) });
  });
}

const heapVerdict = (samples: Sample[]) =>
  verdicts(samples, RUN_S, [{ name: "runs ls", p50: 10, max: 12 }]).find((v) => v.criterion.startsWith("V8 heap"))!;

describe("the soak's heap verdict", () => {
  // The heap used falls to what is live only at a full collection: none in the last sixth here.
  const fullGcEarlyOnly = (t: number) => (t < 100 ? 40 : 55);

  it("passes a live heap that stays flat, whatever the lowest sample of a window reads", () => {
    const verdict = heapVerdict(run((t) => ({ used: fullGcEarlyOnly(t), live: 38 })));
    expect(verdict.criterion).toMatch(/live/);
    expect(verdict.pass).toBe(true);
    expect(verdict.figures).toMatch(/^38\.0 → 38\.0 MB/);
  });

  it("fails a live heap that climbs by 5 MB or more", () => {
    const verdict = heapVerdict(run((t) => ({ used: 60, live: 38 + (t / RUN_S) * 8 })));
    expect(verdict.pass).toBe(false);
  });

  it("judges a run saved before the live heap existed on each window's lowest sample", () => {
    const verdict = heapVerdict(run((t) => ({ used: fullGcEarlyOnly(t) })));
    expect(verdict.criterion).toMatch(/floor \(lowest sample\)/);
    expect(verdict.pass).toBe(false);
  });
});
