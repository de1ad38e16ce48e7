/** Shared by the fault drills in test/chaos/: percentiles, slot coverage, a counting webhook receiver. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Percentiles by nearest rank. */
export function summarize(samples: readonly number[]): { n: number; p50: number; p99: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN;
  return { n: sorted.length, p50: at(50), p99: at(99), max: sorted.at(-1) ?? NaN };
}

export interface SlotRow {
  job: string;
  /** epoch ms */
  slot: number;
  status: string;
}

/**
 * For each job, the slots of a per-second schedule in [fromMs, toMs] (whole seconds) without a
 * row, and those with more than one. Rows outside the window are ignored.
 */
export function coverage(
  rows: readonly SlotRow[],
  jobs: readonly string[],
  fromMs: number,
  toMs: number,
): { expected: number; gaps: string[]; duplicates: string[] } {
  const seen = new Map<string, number>();
  for (const r of rows) {
    if (r.slot < fromMs || r.slot > toMs) continue;
    const key = `${r.job}@${new Date(r.slot).toISOString()}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  const gaps: string[] = [];
  let expected = 0;
  for (const job of jobs) {
    for (let s = Math.ceil(fromMs / 1000) * 1000; s <= toMs; s += 1000) {
      expected++;
      const key = `${job}@${new Date(s).toISOString()}`;
      if (!seen.has(key)) gaps.push(key);
    }
  }
  const duplicates = [...seen].filter(([, n]) => n > 1).map(([key, n]) => `${key} ×${n}`);
  return { expected, gaps, duplicates };
}

export const countBy = <T>(items: readonly T[], key: (item: T) => string): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
};

/**
 * A webhook receiver standing in for the agents: counts every delivery by what it is (a cron
 * mission by job and slot, a note by timer id), so a duplicate is seen where it matters.
 */
export async function countingReceiver(
  options: { delayMs?: () => number; onArrival?: (key: string) => void } = {},
): Promise<{ url: string; cron: Map<string, number>; notes: Map<string, number>; close(): Promise<void> }> {
  const cron = new Map<string, number>();
  const notes = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const mission = JSON.parse(body) as { kind: string; cronJobId?: string; scheduledFor: string; notifyId?: string };
      if (mission.kind === "notify") notes.set(mission.notifyId!, (notes.get(mission.notifyId!) ?? 0) + 1);
      else {
        const key = `${mission.cronJobId}@${mission.scheduledFor}`;
        cron.set(key, (cron.get(key) ?? 0) + 1);
      }
      options.onArrival?.(
        mission.kind === "notify" ? mission.notifyId! : `${mission.cronJobId}@${mission.scheduledFor}`,
      );
      // An agent takes a moment to answer: the delivery is counted when it arrives, answered later.
      const delay = options.delayMs?.() ?? 0;
      if (delay > 0) setTimeout(() => res.end("ok"), delay);
      else res.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    cron,
    notes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
