import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  closeRuns,
  countAttempts,
  countFailedAttempts,
  startRuns,
  type RunRef,
} from "../../src/cron/attempt-queries.ts";
import { rows } from "../../src/db/client.ts";
import { backendName } from "../helpers/db.ts";
import { planLedger, type PlanLedger } from "../helpers/plans.ts";

// The statistics of an analyzed ledger count a few Claimed and Running rows, so a scan of that
// status in a status index looks cheap; between two vacuums such an index holds an entry for
// every run that passed through the state. The transitions find their rows by primary key.
describe.skipIf(backendName !== "postgres")("the run transitions' plans (Postgres)", () => {
  let lab: PlanLedger;
  const refs = async (status: string): Promise<RunRef[]> =>
    (
      await rows<{ id: string; at: string }>(
        lab.database.db,
        sql`select id::text as id, scheduled_for::text as at from cron_job_runs where status = ${status} order by id limit 3`,
      )
    ).map((r) => ({ id: BigInt(r.id), scheduledFor: new Date(r.at) }));

  beforeAll(async () => {
    lab = await planLedger({ analyzed: true });
  });
  afterAll(() => lab.close());

  const byKeyOnly = (found: Awaited<ReturnType<PlanLedger["plans"]>>) => {
    const updates = found.filter((p) => p.sql.startsWith("update"));
    expect(updates.map((p) => p.mode)).toEqual(["force_custom_plan", "force_generic_plan"]);
    for (const p of updates) expect(p.indexes).toEqual(["cron_job_runs_pkey"]);
  };

  it("Claimed → Running finds its runs by their key, not by the Claimed entries of a status index", async () => {
    const claimed = await refs("Claimed");
    byKeyOnly(
      await lab.plans((db) =>
        startRuns(
          db,
          claimed.map((r) => ({
            ...r,
            promptFired: "p",
            startedAt: new Date(),
            sessionId: "s",
            missionJobId: "j",
            laneOwner: null,
            direct: true,
          })),
        ),
      ),
    );
  });

  it("closing Running runs and counting their attempts find them by their key", async () => {
    const running = await refs("Running");
    byKeyOnly(
      await lab.plans((db) =>
        closeRuns(
          db,
          running.map((r) => ({
            ...r,
            status: "Succeeded" as const,
            reason: null,
            finishedAt: new Date(),
            executor: "log",
            output: null,
            exitCode: 0,
          })),
        ),
      ),
    );
    byKeyOnly(await lab.plans((db) => countAttempts(db, running)));
    const ended = { startedAt: new Date(), ms: 5, status: "Failed" as const, httpStatus: 503, excerpt: "busy" };
    byKeyOnly(
      await lab.plans((db) =>
        countFailedAttempts(
          db,
          running.map((r) => ({ ...r, ended })),
        ),
      ),
    );
  });
});
