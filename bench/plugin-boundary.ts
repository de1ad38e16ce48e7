/**
 * The plugin boundary's cost: one handler call, a chain of five, memory per loaded plugin and
 * start-up with five plugins. One JSON line per measure on stdout:
 *   {"measure":"call","n":2000,"p50Us":…,"p99Us":…}
 *   {"measure":"chain5","n":1000,"p50Us":…,"p99Us":…}
 *   {"measure":"rssPerPlugin","plugins":20,"mb":…}
 *   {"measure":"startup5","runs":5,"p50Ms":…,"maxMs":…}
 * Run with `npx node bench/plugin-boundary.ts` (add --expose-gc for steadier memory figures).
 *
 * The worker-thread runtime this replaced, measured the same way on the same machine just before
 * the switch (two shared cores, other work running):
 *   call p50 21 µs / p99 114 µs; chain5 p50 222 µs / p99 3915 µs; 13.61 MB RSS per plugin;
 *   start-up with 5 plugins p50 455 ms / max 673 ms.
 */
import { fileURLToPath } from "node:url";
import { createLogger } from "../src/log.ts";
import { Plugins } from "../src/plugins/service.ts";
import { pluginCopies } from "./plugin-copies.ts";
import { summarize } from "./stats.ts";

const APPENDS = fileURLToPath(new URL("../test/fixtures/plugins/appends", import.meta.url));
const firing = { cronJobId: "7", agentId: "a1", kind: "cron_job", name: "nightly", prompt: "check the backups" };
const gc = (globalThis as { gc?: () => void }).gc;

const start = (dirs: string[]) =>
  Plugins.start({
    dirs,
    handlerTimeoutMs: 5_000,
    memoryLimitMb: 128,
    log: createLogger("silent"),
    now: () => Date.now(),
  });

async function timeChain(plugins: Plugins, n: number): Promise<{ p50Us: number; p99Us: number }> {
  for (let i = 0; i < 200; i++) await plugins.chain.run("cronJobFiring", firing); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await plugins.chain.run("cronJobFiring", firing);
    samples.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  const s = summarize(samples);
  return { p50Us: Math.round(s.p50), p99Us: Math.round(s.p99) };
}

const rssMb = () => {
  gc?.();
  return process.memoryUsage().rss / 2 ** 20;
};

async function main(): Promise<void> {
  const one = await start(pluginCopies(APPENDS, 1));
  console.log(JSON.stringify({ measure: "call", n: 2000, ...(await timeChain(one, 2000)) }));
  await one.stop();

  const five = await start(pluginCopies(APPENDS, 5));
  console.log(JSON.stringify({ measure: "chain5", n: 1000, ...(await timeChain(five, 1000)) }));
  await five.stop();

  const count = 20;
  const dirs = pluginCopies(APPENDS, count);
  const before = rssMb();
  const many = await start(dirs);
  await many.chain.run("cronJobFiring", firing); // every plugin has run once
  const after = rssMb();
  console.log(JSON.stringify({ measure: "rssPerPlugin", plugins: count, mb: +((after - before) / count).toFixed(2) }));
  await many.stop();

  const startups: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const p = await start(pluginCopies(APPENDS, 5));
    startups.push(performance.now() - t0);
    await p.stop();
  }
  const s = summarize(startups);
  console.log(JSON.stringify({ measure: "startup5", runs: 5, p50Ms: Math.round(s.p50), maxMs: Math.round(s.max) }));
}

await main();
