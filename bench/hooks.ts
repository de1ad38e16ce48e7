/**
 * Hook overhead: the cost of one handler call and of a chain of five, with plugins isolated in
 * V8 isolates (how missiond runs them) next to the same plugins run in-process (a vm context
 * on the daemon's thread), and one command hook (a process per call).
 */
import { fileURLToPath } from "node:url";
import { createLogger } from "../src/log.ts";
import { PluginChain, type ChainPlugin } from "../src/plugins/chain.ts";
import { loadInProcess } from "../src/plugins/inprocess.ts";
import { Plugins } from "../src/plugins/service.ts";
import type { HookName } from "../src/plugins/hooks.ts";
import { summarize } from "./stats.ts";
import { pluginCopies } from "./plugin-copies.ts";

const APPENDS = fileURLToPath(new URL("../test/fixtures/plugins/appends", import.meta.url));
const COMMAND = fileURLToPath(new URL("../test/fixtures/plugins/cmd-gate", import.meta.url));
const context = { cronJobId: "1", agentId: "a1", kind: "cron_job", name: "bench", prompt: "p" };

export interface HookRow {
  setup: string;
  calls: number;
  p50: number;
  p99: number;
  max: number;
}

export async function time(label: string, calls: number, run: () => Promise<unknown>): Promise<HookRow> {
  for (let i = 0; i < Math.min(50, calls); i++) await run(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    await run();
    samples.push(performance.now() - start);
  }
  const s = summarize(samples);
  return { setup: label, calls, p50: s.p50, p99: s.p99, max: s.max };
}

const log = createLogger("silent");
const isolated = (dirs: string[]) =>
  Plugins.start({
    dirs,
    handlerTimeoutMs: 5_000,
    breaker: { failures: 0, cooldownMs: 0 },
    memoryLimitMb: 64,
    log,
    now: () => Date.now(),
  });

function inProcessChain(count: number): PluginChain {
  const members: ChainPlugin[] = Array.from({ length: count }, (_, i) => {
    const plugin = loadInProcess(`${APPENDS}/index.js`, {});
    return {
      name: `appends-${i}`,
      required: false,
      shadow: false,
      hooks: new Set<HookName>(plugin.hooks),
      invoke: plugin.invoke,
    };
  });
  return new PluginChain({ plugins: members, handlerTimeoutMs: 5_000, log, now: () => performance.now() });
}

export async function hookOverhead(calls: number): Promise<HookRow[]> {
  const rows: HookRow[] = [];
  const one = await isolated([APPENDS]);
  const five = await isolated(pluginCopies(APPENDS, 5));
  const command = await isolated([COMMAND]);
  try {
    const inproc1 = inProcessChain(1);
    rows.push(await time("1 handler, in-process (vm)", calls, () => inproc1.run("cronJobFiring", context)));
    rows.push(await time("1 handler, isolated (V8 isolate)", calls, () => one.chain.run("cronJobFiring", context)));
    const inproc5 = inProcessChain(5);
    rows.push(await time("chain of 5, in-process (vm)", calls, () => inproc5.run("cronJobFiring", context)));
    rows.push(await time("chain of 5, isolated (V8 isolates)", calls, () => five.chain.run("cronJobFiring", context)));
    rows.push(
      await time("1 command hook (python3, a process per call)", Math.max(20, Math.floor(calls / 20)), () =>
        command.chain.run("cronJobFiring", context),
      ),
    );
  } finally {
    await Promise.all([one.stop(), five.stop(), command.stop()]);
  }
  return rows;
}
