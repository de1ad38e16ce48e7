/**
 * The hostile-plugin drill (test/security/hostile-plugins*.test.ts): a daemon under attack, and a
 * witness job that must keep time while it is.
 */
import { expect } from "vitest";
import { DRAIN_BUDGET_MS, during, probeWhile, serveDaemon, type Probe, type Served } from "./attack.ts";

export const MB = 1024 * 1024;
/** The witness's lateness on a daemon under attack: far below a handler's 5 s timeout. */
export const WITNESS_LATE_MS = 500;
export const ANSWER_MS = 100;
/** What no answer may take: the daemon was frozen (a log flood of one second once froze it for 24 s). */
export const FREEZE_MS = 1_000;

export interface Drill {
  served: Served;
  probe: Probe;
  /** What each attacking call answered (its JSON body, or the error's message). */
  outcomes: unknown[];
}

export interface Run {
  status: string;
  scheduledFor: string;
  startedAt: string | null;
}

/**
 * Serves a daemon with the plugins and a witness job every second, runs `attack` (not awaited)
 * for `ms` while probing, then checks the witness's slots in that window, the probe's answers,
 * and that SIGTERM ends the daemon within its drain budget. `inspect` runs before the SIGTERM.
 */
export async function drill(
  plugins: string[],
  attack: (served: Served) => Promise<unknown>,
  inspect: (d: Drill) => Promise<void>,
  options: { ms?: number; toml?: string } = {},
): Promise<void> {
  const served = await serveDaemon(plugins, options.toml ?? "");
  try {
    const { api } = served;
    const witness = await api.post<{ id: string }>("/v1/cron-jobs", {
      name: "witness",
      agentId: "a1",
      cron: "* * * * * *",
      prompt: "w",
    });
    const runs = async () =>
      (await api.get<{ runs: Run[] }>(`/v1/cron-jobs/${witness.id}/runs`, { limit: "200" })).runs;
    while (!(await runs()).some((r) => r.status === "Succeeded")) await during(50);
    // The same probe before the attack: what the machine's own load makes of an answer's time.
    const calm = p90((await probeWhile(served, during(1_500))).times);
    const from = Date.now();
    const outcomes: unknown[] = [];
    // The attack is not awaited here: its answer is read once the probe's window is over.
    const attacking = attack(served).then(
      (o) => outcomes.push(o),
      (e: Error) => outcomes.push(e.message),
    );
    const probe = await probeWhile(served, during(options.ms ?? 4_000));
    const to = Date.now();
    await Promise.race([attacking, during(16_000)]);
    await during(1_200);
    // Every slot of the window fired, each on time.
    const inWindow = (await runs()).filter((r) => {
      const slot = Date.parse(r.scheduledFor);
      return slot > from && slot <= to - 1_000;
    });
    expect(inWindow.length, "witness slots in the attack's window").toBeGreaterThanOrEqual(
      Math.floor((to - 1_000 - from) / 1_000),
    );
    for (const run of inWindow) {
      expect(run.status, `witness slot ${run.scheduledFor}`).toBe("Succeeded");
      const late = Date.parse(run.startedAt!) - Date.parse(run.scheduledFor);
      expect(late, `lateness of ${run.scheduledFor}`).toBeLessThan(WITNESS_LATE_MS);
    }
    if (process.env.DRILL_DEBUG) console.log(JSON.stringify({ probe, outcomes }).slice(0, 2000));
    expect(probe.failures).toEqual([]);
    // Nine answers in ten within 100 ms, or within three times what they took before the attack
    // (plus 30 ms) on a machine whose load already slows them; and none near a freeze. On a quiet
    // machine every answer comes within 30 ms.
    expect(p90(probe.times), `p90 of /healthz and /metrics (ms); ${calm} ms before the attack`).toBeLessThan(
      Math.max(ANSWER_MS, 3 * calm + 30),
    );
    expect(Math.max(probe.slowest.healthz, probe.slowest.metrics), "slowest answer (ms)").toBeLessThan(FREEZE_MS);
    await inspect({ served, probe, outcomes });
    const end = await served.terminate();
    expect(end.code, "exit code after SIGTERM").toBe(0);
    expect(end.ms, "SIGTERM to exit (ms)").toBeLessThan(DRAIN_BUDGET_MS + 2_000);
  } finally {
    await served.cleanup();
  }
}

const p90 = (times: readonly number[]) => [...times].sort((a, b) => a - b)[Math.floor(times.length * 0.9)] ?? 0;

/** Runs the attacking hook once, as an agent runtime does. */
export const inbound = (served: Served) =>
  served.api.post<{ context: { text: string } }>("/v1/hooks/userMessageInbound", {
    sessionId: "s-attack",
    channelId: null,
    text: "go",
    mediaIds: [],
  });
export const textOf = (outcome: unknown) => (outcome as { context: { text: string } }).context.text;

export const b64 = (text: string) => Buffer.from(text).toString("base64");

/** The attacker's skipped decisions' reasons, oldest first. */
export async function skippedBy(served: Served, plugin: string): Promise<string[]> {
  const { decisions } = await served.api.get<{ decisions: { outcome: string; reason: string | null }[] }>(
    "/v1/hook-decisions",
    { plugin },
  );
  return decisions
    .filter((d) => d.outcome === "skipped")
    .map((d) => d.reason ?? "")
    .reverse();
}
