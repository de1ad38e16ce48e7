import type { Sample } from "../../bench/soak/sample.ts";

/** A soak sample at `t` s with steady figures (one run claimed and closed, 150 MB RSS), overridden where given. */
export const soakSample = (t: number, overrides: Partial<Sample> = {}): Sample => ({
  t,
  dbBytes: 1_000_000,
  walBytes: 0,
  rows: { cron_job_runs: 10 },
  claimLateness: [5],
  doneLateness: [10],
  notClosed: 0,
  claims: 1,
  windowS: 20,
  load1: 1,
  daemonCpuS: 10,
  rssMb: 150,
  heapUsedMb: 40,
  pgCpuS: 20,
  ...overrides,
});
