/**
 * Claims and deliveries per Postgres core: a real `missiond serve` on Postgres (the soak's daemon:
 * log executor, cron-sentinel in the chain), SCALING_BURST slots due in the same second, and the
 * CPU time the Postgres backends of its database and the daemon used from just before the slot
 * until every run was closed; then bytes per row of the tables that only grew.
 * `node bench/soak/burst.ts`; figures in docs/SCALING.md.
 */
import { z } from "zod";
import { startSoakDaemon } from "./daemon.ts";
import { cpuSeconds } from "../proc.ts";

const jobs = z.coerce.number().int().min(1).default(10_000).parse(process.env.SCALING_BURST);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const daemon = await startSoakDaemon("postgres", { jobs: 0, retentionMs: 3_600_000 });
try {
  const backends = async () =>
    (
      await daemon.query<{ pid: number }>(
        "select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()",
      )
    ).map((r) => r.pid);
  const due = new Date(Math.ceil(Date.now() / 1000) * 1000 + 4_000);
  await daemon.query(`insert into cron_jobs (name, agent_id, prompt, cron_expr, timezone, overlap_policy, next_fire_at, anchor_at, created_at, updated_at)
    select 'burst-' || g, 'soak', 'p', '0 0 1 1 *', 'UTC', 'allow', '${due.toISOString()}', now(), now(), now() from generate_series(1, ${jobs}) as g`);
  await daemon.query("select pg_notify('missiond_schedule', 'burst')");
  await sleep(due.getTime() - Date.now() - 500);
  const before = new Map((await backends()).map((pid) => [pid, cpuSeconds(pid)]));
  const daemonBefore = cpuSeconds(daemon.pid);
  const count = async (where: string) =>
    Number((await daemon.query<{ n: string }>(`select count(*)::text as n from cron_job_runs where ${where}`))[0]!.n);
  const limit = due.getTime() + 600_000;
  while ((await count("finished_at is not null")) < jobs && Date.now() < limit) await sleep(250);
  let pgCpu = 0;
  for (const pid of await backends()) pgCpu += cpuSeconds(pid) - (before.get(pid) ?? 0);
  const daemonCpu = cpuSeconds(daemon.pid) - daemonBefore;
  const [t] = await daemon.query<{ claimed: number; closed: number; n: string }>(
    `select extract(epoch from max(claimed_at) - '${due.toISOString()}')::float8 as claimed,
            extract(epoch from max(finished_at) - '${due.toISOString()}')::float8 as closed, count(*)::text as n
     from cron_job_runs`,
  );
  console.log(
    JSON.stringify({
      slots: jobs,
      runs: Number(t!.n),
      allClaimedS: Number(t!.claimed.toFixed(2)),
      allClosedS: Number(t!.closed.toFixed(2)),
      claimsPerS: Math.round(jobs / t!.claimed),
      closedPerS: Math.round(jobs / t!.closed),
      postgresCpuS: Number(pgCpu.toFixed(2)),
      daemonCpuS: Number(daemonCpu.toFixed(2)),
      runsPerPostgresCoreS: Math.round(jobs / pgCpu),
      runsPerDaemonCoreS: Math.round(jobs / daemonCpu),
    }),
  );
  // Bytes per row on tables that only grew (no deletes yet): the packed figure, beside the soak's
  // figure at its plateau, which includes the free space deletes leave.
  const sizes = await daemon.query<{ t: string; rows: string; bytes: string }>(
    ["cron_job_runs", "hook_decisions", "pgboss.job"]
      .map(
        (t) => `select '${t}' as t, (select count(*) from ${t})::text as rows,
          (pg_total_relation_size('${t}') + (select coalesce(sum(pg_total_relation_size(inhrelid)), 0) from pg_inherits where inhparent = '${t}'::regclass))::text as bytes`,
      )
      .join(" union all "),
  );
  for (const r of sizes)
    console.log(
      JSON.stringify({
        table: r.t,
        rows: Number(r.rows),
        bytes: Number(r.bytes),
        bytesPerRow: Math.round(Number(r.bytes) / Number(r.rows)),
      }),
    );
} finally {
  await daemon.stop();
}
