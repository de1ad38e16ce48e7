import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runTimeline } from "../../src/cron/timeline.ts";
import { backendName } from "../helpers/db.ts";
import { planLedger, type PlanLedger } from "../helpers/plans.ts";

describe.skipIf(backendName !== "postgres")("the run timeline's plan (Postgres)", () => {
  let lab: PlanLedger;
  beforeAll(async () => {
    lab = await planLedger({ analyzed: true });
    // The pruner's vacuum keeps the visibility map current; the index alone answers for those pages.
    await lab.database.db.execute(sql`vacuum analyze cron_job_runs`);
  });
  afterAll(() => lab.close());

  it("counts a page of jobs' runs per bucket and status from the slot index alone, never the heap pages", async () => {
    const hour = 3_600_000;
    const found = await lab.plans((db) =>
      runTimeline(db, { from: new Date(lab.base - hour), to: new Date(lab.base), buckets: 60, limit: 20 }),
    );
    const counting = found.filter((p) => p.sql.includes("date_bin"));
    expect(counting.map((p) => p.mode)).toEqual(["force_custom_plan", "force_generic_plan"]);
    for (const p of counting) {
      expect(p.scans).toEqual(["Index Only Scan"]);
      expect(p.indexes).toEqual(["cron_job_runs_slot_uq"]);
    }
  });
});
