/**
 * Soak: a real `missiond serve` on each backend under a steady load for SOAK_MINUTES, with short
 * retention, sampled every SOAK_SAMPLE_S. Prints pass/fail per criterion (report.ts), a timeline,
 * and bytes per row; draws bench/soak.png. `npm run soak`; see docs/benchmarks.md, "Soak", for the settings.
 */
import { fileURLToPath } from "node:url";
import { z } from "zod";
import type { ApiClient } from "../../src/cli/client.ts";
import { parseDuration } from "../../src/duration.ts";
import { serverReachable } from "../databases.ts";
import { printTable, summarize } from "../stats.ts";
import { chartSvg, loadSeries, saveSeries, writeChartPng, type Series } from "./chart.ts";
import { pruneIntervalMs, startSoakDaemon, type Backend, type SoakDaemon } from "./daemon.ts";
import { startFlow } from "./load.ts";
import { printBackend, type QueryTiming, type Verdict } from "./report.ts";
import { sampler, type Sample } from "./sample.ts";

const duration = z
  .string()
  .transform(
    (v, ctx) => parseDuration(v) ?? (ctx.addIssue({ code: "custom", message: `not a duration: ${v}` }), z.NEVER),
  );

const settings = z
  .object({
    SOAK_MINUTES: z.coerce.number().positive().default(30),
    SOAK_RETENTION: duration.default(300_000),
    // The load before the measured minutes: by default until the first pass that prunes rows, so
    // the measured minutes start with the database filled to its retention and the whole workload
    // (claims, pruning, vacuums) running. Sampled and shown; outside the verdicts.
    SOAK_WARMUP: duration.optional(),
    // One count for every backend ("300"), or one per backend ("pglite=100,postgres=300").
    SOAK_JOBS: z
      .string()
      .default("1000")
      .transform((v, ctx) => {
        const count = z.coerce.number().int().min(1);
        if (!v.includes("=")) return { pglite: count.parse(v), postgres: count.parse(v) };
        const pairs = Object.fromEntries(v.split(",").map((pair) => pair.split("=").map((x) => x.trim())));
        const parsed = z.object({ pglite: count, postgres: count }).partial().strict().safeParse(pairs);
        if (!parsed.success) {
          ctx.addIssue({ code: "custom", message: `SOAK_JOBS: not "N" or "pglite=N,postgres=M": ${v}` });
          return z.NEVER;
        }
        return parsed.data;
      }),
    SOAK_BACKENDS: z
      .string()
      .default("pglite,postgres")
      .transform((v) => v.split(",").map((b) => z.enum(["pglite", "postgres"]).parse(b.trim()))),
    SOAK_SAMPLE_S: z.coerce.number().positive().optional(),
    SOAK_TIMERS: z.coerce.number().min(0).default(5),
    SOAK_TODOS: z.coerce.number().min(0).default(2),
    SOAK_MESSAGES: z.coerce.number().min(0).default(2),
    SOAK_CLEARS: z.coerce.number().min(0).default(0.5),
    SOAK_CHART: z.string().default(fileURLToPath(new URL("../soak.png", import.meta.url))),
    // Redraw SOAK_CHART from the samples a run saved (its chart path with .json), without a run.
    SOAK_REPLOT: z.string().optional(),
  })
  .parse(process.env);

const runS = settings.SOAK_MINUTES * 60;
const warmS = (settings.SOAK_WARMUP ?? settings.SOAK_RETENTION + pruneIntervalMs(settings.SOAK_RETENTION)) / 1000;
const jobsFor = (backend: Backend) => {
  const jobs = settings.SOAK_JOBS[backend];
  if (jobs === undefined) throw new Error(`SOAK_JOBS names no count for ${backend}`);
  return jobs;
};
const jobsText = settings.SOAK_BACKENDS.map((b) => `${b} ${jobsFor(b)}`).join(", ");
const sampleS = settings.SOAK_SAMPLE_S ?? Math.max(5, Math.round(runS / 90));
const SAMPLE_AFTER_SECOND_MS = 150;
const minutes = (s: number) => Math.round((s / 60) * 10) / 10;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** The `runs ls` route and the calls the dashboard's views make on each refresh. */
async function timeQueries(api: ApiClient): Promise<QueryTiming[]> {
  const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
  const now = new Date().toISOString();
  const calls: [string, () => Promise<unknown>][] = [
    ["runs ls (GET /v1/runs?limit=50)", () => api.get("/v1/runs", { limit: 50 })],
    ["Now: GET /v1/doctor", () => api.get("/v1/doctor")],
    [
      "Now: GET /v1/cron-jobs?dueBefore (50)",
      () => api.get("/v1/cron-jobs", { dueBefore: new Date(Date.now() + 600_000).toISOString(), limit: 50 }),
    ],
    ["Now/Sessions: GET /v1/notify?status=Pending", () => api.get("/v1/notify", { status: "Pending", limit: 50 })],
    ["Now/Sessions: GET /v1/sessions", () => api.get("/v1/sessions")],
    ["Jobs: GET /v1/cron-jobs?limit=50", () => api.get("/v1/cron-jobs", { limit: 50 })],
    [
      "Ledger: GET /v1/run-timeline (1 h, 60 buckets)",
      () => api.get("/v1/run-timeline", { from: hourAgo, to: now, buckets: 60, limit: 20 }),
    ],
    ["Ledger: GET /v1/runs (1 h, 50)", () => api.get("/v1/runs", { from: hourAgo, limit: 50 })],
    ["Plugins: GET /v1/plugins", () => api.get("/v1/plugins")],
    [
      "Plugins: GET /v1/hook-decisions (100)",
      () => api.get("/v1/hook-decisions", { plugin: "cron-sentinel", limit: 100 }),
    ],
  ];
  const out: QueryTiming[] = [];
  for (const [name, call] of calls) {
    await call();
    const ms: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      await call();
      ms.push(performance.now() - started);
    }
    const s = summarize(ms);
    out.push({ name, p50: s.p50, max: s.max });
  }
  return out;
}

async function bytesPerRow(daemon: SoakDaemon): Promise<void> {
  const tables = ["cron_job_runs", "hook_decisions", "notify_timers", "todos", "session_clears", "pgboss.job"];
  const found = await daemon.query<{ t: string; rows: string; width: string; bytes: string }>(
    tables
      .map(
        (t) =>
          `select '${t}' as t, (select count(*) from ${t})::text as rows,
             (select coalesce(avg(pg_column_size(x.*)), 0)::int from ${t} x)::text as width,
             (pg_total_relation_size('${t}') + (select coalesce(sum(pg_total_relation_size(inhrelid)), 0) from pg_inherits where inhparent = '${t}'::regclass))::text as bytes`,
      )
      .join(" union all "),
  );
  console.log(
    "\nBytes per row at the end (table, indexes and TOAST over live rows; churned tables carry their free space):\n",
  );
  printTable(
    ["table", "rows", "row data bytes (avg)", "total bytes", "bytes per row"],
    found.map((r) => [
      r.t,
      Number(r.rows),
      Number(r.width),
      Number(r.bytes),
      Number(r.rows) ? Math.round(Number(r.bytes) / Number(r.rows)) : "-",
    ]),
  );
}

function timeline(samples: Sample[]): void {
  const every = Math.max(1, Math.round(60 / sampleS));
  printTable(
    [
      "min",
      "db MB",
      "rows",
      "runs",
      "claims/s",
      "started p99",
      "closed p99",
      "not closed 10 s",
      "RSS MB",
      "heap MB",
      "live heap MB",
      "heap total MB",
      "plugin heap MB",
      "daemon CPU %",
      "pg CPU %",
      "load",
    ],
    samples
      .filter((_, i) => i % every === 0 || i === samples.length - 1)
      .map((s) => [
        Math.round((s.t / 60) * 10) / 10,
        s.dbBytes / 1024 / 1024,
        Object.values(s.rows).reduce((a, b) => a + b, 0),
        s.rows.cron_job_runs ?? 0,
        s.windowS ? s.claims / s.windowS : 0,
        summarize(s.claimLateness).p99,
        summarize(s.doneLateness).p99,
        s.notClosed,
        s.rssMb,
        s.heapUsedMb,
        s.heapLiveMb ?? "-",
        s.heapTotalMb ?? "-",
        s.pluginHeapMb ?? "-",
        s.windowS ? (s.daemonCpuS / s.windowS) * 100 : 0,
        s.windowS && Number.isFinite(s.pgCpuS) ? (s.pgCpuS / s.windowS) * 100 : "-",
        s.load1,
      ]),
  );
}

async function soak(backend: Backend): Promise<{ samples: Sample[]; verdicts: Verdict[]; queries: QueryTiming[] }> {
  const jobs = jobsFor(backend);
  const daemon = await startSoakDaemon(backend, { jobs, retentionMs: settings.SOAK_RETENTION });
  try {
    const flow = await startFlow(daemon.api, {
      timers: settings.SOAK_TIMERS,
      todos: settings.SOAK_TODOS,
      messages: settings.SOAK_MESSAGES,
      clears: settings.SOAK_CLEARS,
    });
    const started = Date.now();
    const take = sampler(daemon, started);
    const samples: Sample[] = [];
    // On a starved machine a sample can take longer than the interval: the next one then waits
    // for the next tick instead of following at once, so sampling never crowds the daemon.
    const end = started + (warmS + runS) * 1000;
    for (let next = started; next <= end;) {
      // Just after a whole second, when the per-second slots' work is done: on PGlite the sample's
      // statements run on the daemon's thread, and across a slot's moment they would delay the
      // slots the sample measures.
      await sleep(Math.ceil(next / 1000) * 1000 + SAMPLE_AFTER_SECOND_MS - Date.now());
      samples.push(await take.sample((Date.now() - started) / 1000));
      while (next <= Date.now()) next += sampleS * 1000;
      if (next > end && samples.at(-1)!.t < warmS + runS) next = Math.max(end, Date.now());
    }
    // The measured minutes, their time counted from the end of the warm-up.
    const measured = samples.filter((s) => s.t >= warmS).map((s) => ({ ...s, t: s.t - warmS }));
    const queries = await timeQueries(daemon.api);
    await flow.stop();
    console.log(`\n## ${backend}: timeline\n`);
    console.log(`(minutes from the start of the load; the first ${minutes(warmS)} are the warm-up)\n`);
    timeline(samples);
    console.log(
      `\nFlow sent: ${Object.entries(flow.sent)
        .map(([k, n]) => `${k} ${n}`)
        .join(", ")}; errors ${flow.errors}${flow.lastError ? ` (last: ${flow.lastError})` : ""}`,
    );
    const steady = measured.filter((s) => s.t >= runS / 2 && s.windowS > 0);
    const claims = steady.reduce((a, s) => a + s.claims, 0);
    const seconds = steady.reduce((a, s) => a + s.windowS, 0);
    const daemonCpu = steady.reduce((a, s) => a + s.daemonCpuS, 0);
    console.log(
      `Last half: ${(claims / seconds).toFixed(0)} runs claimed a second (of ${jobs} due), daemon CPU ${((daemonCpu / seconds) * 100).toFixed(0)}% of a core` +
        (backend === "postgres"
          ? `, Postgres backends of this database ${((steady.reduce((a, s) => a + s.pgCpuS, 0) / seconds) * 100).toFixed(0)}% of a core`
          : ""),
    );
    await bytesPerRow(daemon);
    return { samples, queries, verdicts: printBackend(backend, measured, runS, queries) };
  } finally {
    await daemon.stop();
  }
}

const subtitle = `per-second jobs: ${jobsText}; retention ${process.env.SOAK_RETENTION ?? "5m"}, ${settings.SOAK_MINUTES} min after ${minutes(warmS)} min of warm-up`;
if (settings.SOAK_REPLOT) {
  await writeChartPng(chartSvg(loadSeries(settings.SOAK_REPLOT), subtitle), settings.SOAK_CHART);
  console.log(`Chart: ${settings.SOAK_CHART}, from ${settings.SOAK_REPLOT}`);
  process.exit(0);
}
const samplesPath = settings.SOAK_CHART.replace(/\.png$/, "") + ".json";
const startedAt = Date.now();
console.log(
  `missiond soak — ${new Date().toISOString()} — per-second jobs: ${jobsText}; timers ${settings.SOAK_TIMERS}/s, todo batches ${settings.SOAK_TODOS}/s, messages ${settings.SOAK_MESSAGES}/s, clears ${settings.SOAK_CLEARS}/s; ${settings.SOAK_MINUTES} min per backend after ${minutes(warmS)} min of warm-up, retention ${process.env.SOAK_RETENTION ?? "5m"}, a sample every ${sampleS} s`,
);
const series: Series[] = [];
const summary: (string | number)[][] = [];
for (const backend of settings.SOAK_BACKENDS) {
  if (backend === "postgres" && !(await serverReachable())) {
    console.log("(no Postgres server reachable: Postgres skipped)");
    continue;
  }
  const { samples, verdicts, queries } = await soak(backend);
  series.push({ backend, samples, verdicts, queries, warmupS: warmS });
  saveSeries(series, samplesPath);
  for (const v of verdicts) summary.push([backend, v.criterion, v.pass ? "PASS" : "FAIL"]);
}
console.log("\n## Summary\n");
printTable(["db", "criterion", "result"], summary);
await writeChartPng(chartSvg(series, subtitle), settings.SOAK_CHART);
console.log(
  `\nChart: ${settings.SOAK_CHART} (samples: ${samplesPath})\n(soak took ${Math.round((Date.now() - startedAt) / 1000)} s)`,
);
