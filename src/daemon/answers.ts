import { z } from "zod";
import { count, idString, instant } from "../answer-fields.ts";
import { RETENTION_KINDS } from "../retention/config.ts";

/** What the health routes answer: health.ts doctor() and readiness(). */

export const readiness = z
  .object({
    ready: z.boolean(),
    checks: z
      .object({
        database: z.boolean(),
        disk: z.boolean().describe("False when the database's disk is full (when this daemon can see it)."),
        pgBoss: z.boolean(),
        scheduler: z.boolean(),
      })
      .strict(),
  })
  .strict();

const day = z.iso.date();

export const doctorReport = z
  .object({
    ok: z.boolean(),
    overdueJobs: z.array(
      z.object({ id: idString, name: z.string(), nextFireAt: instant, lateBySeconds: count }).strict(),
    ),
    stuckRuns: z.array(
      z
        .object({ id: idString, cronJobId: idString, status: z.string(), since: instant, claimedBy: z.string() })
        .strict(),
    ),
    failingAgents: z.array(
      z.object({ agentId: z.string(), failures: count, lastFailureAt: instant, lastStatus: z.string() }).strict(),
    ),
    overdueTimers: z.array(z.object({ id: idString, sessionId: z.string(), dueAt: instant }).strict()),
    plugins: z.array(
      z
        .object({ name: z.string(), state: z.string(), needsApproval: z.boolean(), error: z.string().nullable() })
        .strict(),
    ),
    retentionLag: z.array(
      z.object({ kind: z.enum(RETENTION_KINDS), retention: z.number(), message: z.string() }).strict(),
    ),
    partitions: z
      .array(
        z
          .object({
            table: z.string(),
            days: count,
            oldestDay: day.nullable(),
            newestDay: day.nullable(),
            aheadDays: count,
            defaultRows: count,
          })
          .strict(),
      )
      .nullable()
      .describe("The ledger's day partitions on Postgres; null on the embedded database."),
    missingPluginDirs: z.array(z.string()),
    disabledPlugins: z
      .array(z.object({ name: z.string(), required: z.boolean() }).strict())
      .describe("Plugins the operator disabled: a note, not a problem (`ok` stays true)."),
    alertRoutes: z
      .array(
        z
          .object({
            route: z.string(),
            status: z.string(),
            attempts: count,
            error: z.string().nullable(),
          })
          .strict(),
      )
      .describe("Alert routes whose latest notification is failing (retried) or was given up."),
    disk: z
      .object({ path: z.string(), freeBytes: count, totalBytes: count, full: z.boolean() })
      .strict()
      .nullable()
      .describe(
        "The filesystem of the database's files (the embedded data directory, or a server's tablespace when it is on this machine); null when this daemon cannot see it. `full` makes the report not ok.",
      ),
    vanishedInstances: z
      .array(z.object({ name: z.string(), host: z.string(), lastHeartbeatAt: instant }).strict())
      .describe("Daemon instances that stopped heart-beating without a clean stop (crashed, killed or cut off)."),
    nativeSandbox: z
      .object({ kind: z.enum(["bwrap", "uid", "none"]), warning: z.string().nullable(), nativePlugins: count })
      .strict(),
    clockSkewMs: z.number(),
    schedulerArmed: z.boolean(),
    jobsFiles: z.object({ files: z.array(z.string()), at: instant.nullable(), error: z.string().nullable() }).strict(),
  })
  .strict();
