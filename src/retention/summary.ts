import { z } from "zod";
import { jobEverExisted } from "../cron/queries.ts";
import type { Executor } from "../db/client.ts";
import { MissiondError } from "../errors.ts";
import { idString } from "../validation.ts";
import { summaryCounts } from "./summary-queries.ts";

const instant = z.iso.datetime({ offset: true });

/** GET /v1/run-summary: run counts and usage per job and status over [from, to), pruned history included. */
export const summaryQuery = z
  .object({
    from: instant.optional(),
    to: instant.optional(),
    jobId: idString("job").optional(),
  })
  .strict()
  .refine((v) => v.from === undefined || v.to === undefined || Date.parse(v.to) > Date.parse(v.from), {
    path: ["to"],
    message: "must be after from",
  });

export interface SummaryRow {
  jobId: string;
  jobName: string;
  agentId: string;
  status: string;
  /** Runs in the range: those still in the ledger plus those retention rolled up. */
  count: number;
  /** Of which counted from rollups (whole UTC days that overlap the range). */
  rolledUp: number;
  /** What those runs reported they consumed (runs that reported nothing add nothing). */
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/**
 * Counts from the live rows and the rollups of pruned ones. A run is in exactly one of them (the
 * delete and the rollup are one statement), so the sum neither misses nor doubles a run. Rollups
 * are per UTC day: a range that cuts a day counts that day's pruned runs whole.
 */
export async function runSummary(db: Executor, query: z.output<typeof summaryQuery>): Promise<SummaryRow[]> {
  const jobId = query.jobId !== undefined ? BigInt(query.jobId) : undefined;
  if (jobId !== undefined && !(await jobEverExisted(db, jobId)))
    throw new MissiondError("NOT_FOUND", `no cron job with id "${query.jobId}"`);
  const found = await summaryCounts(db, { from: query.from, to: query.to, jobId });
  return found.map((r) => ({
    jobId: r.job_id,
    jobName: r.name,
    agentId: r.agent_id,
    status: r.status,
    count: Number(r.live) + Number(r.rolled),
    rolledUp: Number(r.rolled),
    inputTokens: Number(r.input_tokens),
    outputTokens: Number(r.output_tokens),
    costUsd: Number(r.cost_usd),
  }));
}
