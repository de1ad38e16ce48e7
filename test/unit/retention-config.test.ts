import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.ts";
import { bossDeleteAfterSeconds, bossMaintenanceSeconds } from "../../src/db/boss.ts";
import { isMissiondError } from "../../src/errors.ts";
import { describeRetention } from "../../src/retention/config.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../helpers/tmp.ts";

function load(toml: string) {
  const dir = tempDir("retention-config");
  writeFileSync(join(dir, "config.toml"), toml);
  return loadConfig({ configPath: join(dir, "config.toml"), env: {}, cwd: dir, hostname: "h", pid: 1 });
}

function refusal(toml: string): string {
  try {
    load(toml);
  } catch (err) {
    if (isMissiondError(err)) return err.message;
    throw err;
  }
  throw new Error("the configuration was accepted");
}

describe("[retention] configuration", () => {
  it("defaults to a month of runs, the last 100 of each job, failures a quarter, decisions a week", () => {
    const { retention } = load("");
    expect(retention).toEqual({
      runsMs: 30 * 86_400_000,
      runsKeepLast: 100,
      failedRunsMs: 90 * 86_400_000,
      decisionsMs: 7 * 86_400_000,
      timersMs: 30 * 86_400_000,
      todosMs: 30 * 86_400_000,
      clearsMs: 30 * 86_400_000,
      eventsMs: 30 * 86_400_000,
      idempotencyKeysMs: 86_400_000,
      pruneIntervalMs: 3_600_000,
      archiveDir: null,
    });
  });

  it('reads durations, "0" as forever, and archive_dir relative to the file', () => {
    const config = load(
      `[retention]\nruns = "20s"\nfailed_runs = "0"\nevents = "0"\nprune_interval = "250ms"\narchive_dir = "archive"\n`,
    );
    expect(config.retention).toMatchObject({ runsMs: 20_000, failedRunsMs: 0, eventsMs: 0, pruneIntervalMs: 250 });
    expect(config.retention.archiveDir).toBe(join(config.configFile!, "..", "archive"));
    expect(describeRetention(config.retention)).toContain("Failed/TimedOut/Unknown/Cancelled runs forever");
  });

  it("refuses a retention that is not a duration, naming the key", () => {
    expect(refusal(`[retention]\nruns = "30"\n`)).toContain(
      'retention.runs: not a retention: "30" (use e.g. 30d, 12h, 20s — at least 1s — or "0" to keep forever)',
    );
    expect(refusal(`[retention]\nprune_interval = "0"\n`)).toContain("retention.prune_interval: not a prune interval");
    expect(refusal(`[retention]\nkeep = "1d"\n`)).toContain("retention");
  });

  it("refuses failed runs kept shorter than the others", () => {
    expect(refusal(`[retention]\nruns = "30d"\nfailed_runs = "7d"\n`)).toContain(
      "retention.failed_runs: must be at least runs",
    );
    expect(refusal(`[retention]\nruns = "0"\nfailed_runs = "7d"\n`)).toContain("retention.failed_runs");
  });

  it("keeps pg-boss's finished jobs no longer than the runs they carried, at most its own week", () => {
    expect(bossDeleteAfterSeconds(load(`[retention]\nruns = "2d"\nfailed_runs = "3d"\n`).retention)).toEqual({
      finished: 172_800,
      dead: 259_200,
    });
    expect(bossDeleteAfterSeconds(load(`[retention]\nruns = "0"\nfailed_runs = "0"\n`).retention)).toEqual({
      finished: 604_800,
      dead: 604_800,
    });
    expect(bossDeleteAfterSeconds(load(`[retention]\nruns = "1500ms"\n`).retention).finished).toBe(2);
  });

  it("runs pg-boss's deletion pass as often as the pruner, not once a day", () => {
    expect(bossMaintenanceSeconds(load("").retention)).toBe(3_600);
    expect(bossMaintenanceSeconds(load(`[retention]\nprune_interval = "30s"\n`).retention)).toBe(30);
    expect(bossMaintenanceSeconds(load(`[retention]\nprune_interval = "100ms"\n`).retention)).toBe(1);
    expect(bossMaintenanceSeconds(load(`[retention]\nprune_interval = "2d"\n`).retention)).toBe(86_400);
  });
});
