import { describe, expect, it } from "vitest";
import { Metrics } from "../../src/metrics.ts";

const sources = {
  overdueJobs: async () => 0,
  missionQueueDepth: async () => 0,
  schedulerPending: () => 0,
  pendingTimers: async () => 0,
  clockSkewMs: () => 0,
  oldestRowSeconds: async () => ({}),
  pluginHeapBytes: () => ({}),
};

describe("per-job metrics", () => {
  it("count outcomes only, track failures in a row and the last success, for at most job_labels_max jobs", async () => {
    const metrics = new Metrics(sources);
    metrics.limitJobLabels(2);
    const at = new Date("2030-01-01T00:00:00Z");
    metrics.jobRun("nightly", "Failed", at);
    metrics.jobRun("nightly", "TimedOut", at);
    metrics.jobRun("nightly", "Running", at);
    metrics.jobRun("hourly", "Succeeded", at);
    metrics.jobRun("third", "Failed", at);
    const text = await metrics.registry.metrics();
    expect(text).toContain('missiond_job_runs_total{job="nightly",status="Failed"} 1');
    expect(text).toContain('missiond_job_runs_total{job="nightly",status="TimedOut"} 1');
    expect(text).not.toContain('status="Running"');
    expect(text).toContain('missiond_job_consecutive_failures{job="nightly"} 2');
    expect(text).toContain(`missiond_job_last_success_timestamp_seconds{job="hourly"} ${at.getTime() / 1000}`);
    // Past the cap, a job gets no series at all.
    expect(text).not.toContain('job="third"');

    // The evaluator's reading of the ledger is the truth: it replaces the instance's own count.
    metrics.job("nightly", 5, null);
    expect(await metrics.registry.metrics()).toContain('missiond_job_consecutive_failures{job="nightly"} 5');
    metrics.jobRun("nightly", "Succeeded", at);
    expect(await metrics.registry.metrics()).toContain('missiond_job_consecutive_failures{job="nightly"} 0');
  });
});
