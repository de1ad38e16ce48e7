import { sql } from "drizzle-orm";
import postgres from "postgres";
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
import { captured, planLedger, type PlanLedger } from "../helpers/plans.ts";

interface ExplainNode {
  "Node Type": string;
  "Actual Rows": number;
  "Rows Removed by Filter"?: number;
  Plans?: ExplainNode[];
}
const explainNodes = (node: ExplainNode): ExplainNode[] => [node, ...(node.Plans ?? []).flatMap(explainNodes)];

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

// A day's partition before its first ANALYZE (every new day's, for its first minutes of load): a
// batch of closes longer than a recordset's planned rows, under a generic plan (a prepared close
// run five times on its connection), was read through the slots index over the whole day so far
// to find its runs: at 200 runs a second, 13,478 index entries for 128 closes. Bounded by the
// batch's own slots as well as by its days, it reads about that slot's runs however the day grows.
describe.skipIf(backendName !== "postgres")("a long batch's close on a day not analyzed yet (Postgres)", () => {
  let lab: PlanLedger;
  beforeAll(async () => {
    lab = await planLedger({ analyzed: false });
  });
  afterAll(() => lab.close());

  /** Rows the close's plan read from today's partition (index entries and rows, filtered out or not). */
  const rowsRead = async (mode: string, refs: readonly RunRef[]): Promise<number> => {
    const [statement] = await captured(lab.url, (db) =>
      closeRuns(
        db,
        refs.map((r) => ({
          ...r,
          status: "Succeeded" as const,
          reason: null,
          finishedAt: new Date(),
          executor: "log",
          output: null,
          exitCode: 0,
        })),
      ),
    );
    const admin = postgres(lab.url, { max: 1, onnotice: () => {} });
    let read = 0;
    try {
      await admin
        .begin(async (tx) => {
          await tx.unsafe(`set local plan_cache_mode = ${mode}`);
          // The batch goes as text (postgres.js would quote a string sent for a json parameter again).
          const text = statement!.sql.replace("json_to_recordset($1::json)", "json_to_recordset($1::text::json)");
          const [row] = await tx.unsafe(`explain (analyze, format json) ${text}`, statement!.params as never[]);
          const plan = (row as unknown as { "QUERY PLAN": [{ Plan: ExplainNode }] })["QUERY PLAN"][0].Plan;
          read = explainNodes(plan)
            .filter((n) => /Scan$/.test(n["Node Type"]) && n["Node Type"] !== "Function Scan")
            .reduce((sum, n) => sum + n["Actual Rows"] + (n["Rows Removed by Filter"] ?? 0), 0);
          throw new Error("rolled back");
        })
        .catch((err: Error) => {
          if (err.message !== "rolled back") throw err;
        });
    } finally {
      await admin.end();
    }
    return read;
  };

  it("reads about its slot's runs, not the whole day's, under custom and generic plans", async () => {
    // The seed's Running runs: one per job (200), all at the day's newest slot; 60,000 runs today.
    const running = (
      await rows<{ id: string; at: string }>(
        lab.database.db,
        sql`select id::text as id, scheduled_for::text as at from cron_job_runs where status = 'Running' order by id limit 150`,
      )
    ).map((r) => ({ id: BigInt(r.id), scheduledFor: new Date(r.at) }));
    expect(running).toHaveLength(150);
    for (const mode of ["force_custom_plan", "force_generic_plan"])
      expect(await rowsRead(mode, running), mode).toBeLessThan(1_000);
  });
});
