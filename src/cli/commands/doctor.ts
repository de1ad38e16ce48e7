import type { Command } from "commander";
import type { CliContext } from "../context.ts";
import { EXIT } from "../io.ts";

/** What GET /v1/doctor reports. */
interface Diagnosis {
  ok: boolean;
  overdueJobs: { id: string; name: string; nextFireAt: string; lateBySeconds: number }[];
  stuckRuns: { id: string; cronJobId: string; status: string; since: string; claimedBy: string }[];
  overdueTimers: { id: string; sessionId: string; dueAt: string }[];
  failingAgents: { agentId: string; failures: number; lastFailureAt: string; lastStatus: string }[];
  plugins: { name: string; state: string; error: string | null }[];
  missingPluginDirs: string[];
  /** Absent from a daemon older than `plugins disable`. */
  disabledPlugins?: { name: string; required: boolean }[];
  /** Absent from a daemon older than alerts. */
  alertRoutes?: { route: string; status: string; attempts: number; error: string | null }[];
  /** Absent from a daemon older than the instances' heartbeat. */
  vanishedInstances?: { name: string; host: string; lastHeartbeatAt: string }[];
  /** How native plugins run (absent from older daemons); a warning when they run as the daemon. */
  nativeSandbox?: { kind: string; warning: string | null; nativePlugins: number };
  /** The database's disk, when the daemon can see it (absent from older daemons). */
  disk?: { path: string; freeBytes: number; totalBytes: number; full: boolean } | null;
  clockSkewMs: number;
  schedulerArmed: boolean;
  /** Postgres: the ledger's day partitions (null on the embedded database; absent from older daemons). */
  partitions?:
    { table: string; days: number; newestDay: string | null; aheadDays: number; defaultRows: number }[] | null;
  /** Absent from a daemon older than jobs files. */
  jobsFiles?: { files: string[]; at: string | null; error: string | null };
}

/** `missiond doctor`: exits 1 when anything needs attention, so scripts can alert on it. */
export function registerDoctor(program: Command, ctx: CliContext): void {
  program
    .command("doctor")
    .description("what is late, stuck, failing or misconfigured; exits 1 when it finds anything")
    .action(async () => {
      const report = await ctx.client().get<Diagnosis>("/v1/doctor");
      ctx.print(report, () => describe(report));
      if (!report.ok) ctx.setExit(EXIT.ERROR);
    });
}

function describe(report: Diagnosis): string {
  const sections: [string, unknown[], (item: never) => string][] = [
    [
      "jobs that should have fired but did not",
      report.overdueJobs,
      (j: Diagnosis["overdueJobs"][number]) =>
        `job ${j.id} "${j.name}": next slot ${j.nextFireAt}, ${j.lateBySeconds}s ago`,
    ],
    [
      "stuck runs",
      report.stuckRuns,
      (r: Diagnosis["stuckRuns"][number]) =>
        `run ${r.id} of job ${r.cronJobId}: ${r.status} since ${r.since} (${r.claimedBy})`,
    ],
    [
      "notify timers that should have been delivered",
      report.overdueTimers,
      (t: Diagnosis["overdueTimers"][number]) => `timer ${t.id} for session ${t.sessionId}: due ${t.dueAt}`,
    ],
    [
      "agents whose missions failed in the last 24 h",
      report.failingAgents,
      (a: Diagnosis["failingAgents"][number]) =>
        `${a.agentId}: ${a.failures} failed, last ${a.lastStatus} at ${a.lastFailureAt}`,
    ],
    [
      "plugins not active or needing approval",
      report.plugins,
      (p: Diagnosis["plugins"][number]) => `${p.name}: ${p.state}${p.error ? ` (${p.error})` : ""}`,
    ],
    [
      "configured plugin directories that do not exist",
      report.missingPluginDirs,
      (dir: string) => `${dir} (plugin_dirs / MISSIOND_PLUGIN_DIRS)`,
    ],
    [
      "alert routes that do not answer",
      report.alertRoutes ?? [],
      (r: NonNullable<Diagnosis["alertRoutes"]>[number]) =>
        `${r.route}: ${r.status === "failed" ? "gave up" : "retrying"} after ${r.attempts} tr${r.attempts === 1 ? "y" : "ies"}${r.error ? ` (${r.error})` : ""}`,
    ],
    [
      "instances that stopped heart-beating",
      report.vanishedInstances ?? [],
      (i: NonNullable<Diagnosis["vanishedInstances"]>[number]) =>
        `${i.name} on ${i.host}: last heartbeat at ${i.lastHeartbeatAt}`,
    ],
  ];
  const lines = sections.flatMap(([title, items, line]) =>
    items.length ? [`${title}:`, ...items.map((i) => `  ${line(i as never)}`)] : [],
  );
  if (Math.abs(report.clockSkewMs) > 1_000)
    lines.push(`clock: the local clock is ${report.clockSkewMs} ms off the database's`);
  if (!report.schedulerArmed) lines.push("scheduler: not armed");
  if (report.disk?.full)
    lines.push(
      `disk: the database's disk is full: ${report.disk.freeBytes} bytes free of ${report.disk.totalBytes} at ${report.disk.path}`,
    );
  const sandbox = report.nativeSandbox;
  if (sandbox?.warning && sandbox.nativePlugins > 0)
    lines.push(`native plugins: ${sandbox.nativePlugins} loaded, unconfined: ${sandbox.warning}`);
  for (const p of report.partitions ?? [])
    if (p.aheadDays === 0)
      lines.push(
        `partitions: ${p.table} has no partition ahead of today (newest ${p.newestDay ?? "none"}); new rows go to ${p.table}_default until a prune pass makes them`,
      );
  if (report.jobsFiles?.error)
    lines.push(
      `jobs files: not applied at ${report.jobsFiles.at}, jobs left as they were:\n  ${report.jobsFiles.error}`,
    );
  // Notes: the operator's own choices, shown without making the report a failure.
  const notes = (report.disabledPlugins ?? []).map(
    (p) =>
      `note: plugin ${p.name} is disabled${p.required ? " (a required gate: its hooks are not gated meanwhile)" : ""}; \`missiond plugins enable ${p.name}\` puts it back`,
  );
  return [...(lines.length ? lines : ["all good: nothing late, stuck, failing or misconfigured"]), ...notes].join("\n");
}
