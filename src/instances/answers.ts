import { z } from "zod";
import { count, instant } from "../answer-fields.ts";
import type { InstanceRow } from "../db/schema/index.ts";

/** A daemon instance as GET /v1/instances answers it. */
export const instanceView = z
  .object({
    name: z.string().describe("The instance's name (`instance_name`, else host:pid): the runs' `claimedBy`."),
    version: z.string(),
    host: z.string(),
    pid: count.nullable(),
    startedAt: instant,
    heartbeatAt: instant.describe("Its latest heartbeat (or its stop)."),
    stoppedAt: instant.nullable().describe("When it stopped cleanly; null while it runs or if it vanished."),
    state: z.enum(["running", "stopped", "vanished"]).describe("`vanished`: no heartbeat for 30 s and no clean stop."),
    claimsLastMinute: count.describe("Slots it claimed in the minute before its latest heartbeat."),
    deliveriesLastMinute: count.describe("Delivery attempts it started in that minute."),
  })
  .strict();

export const instanceList = z.object({ instances: z.array(instanceView) }).strict();

export type InstanceView = z.output<typeof instanceView>;

export function instanceAnswer(row: InstanceRow, vanishedBefore: number): InstanceView {
  const state = row.stoppedAt ? "stopped" : row.heartbeatAt.getTime() < vanishedBefore ? "vanished" : "running";
  return {
    name: row.name,
    version: row.version,
    host: row.host,
    pid: row.pid,
    startedAt: row.startedAt.toISOString(),
    heartbeatAt: row.heartbeatAt.toISOString(),
    stoppedAt: row.stoppedAt?.toISOString() ?? null,
    state,
    claimsLastMinute: row.claimsLastMinute,
    deliveriesLastMinute: row.deliveriesLastMinute,
  };
}
