import { sql } from "drizzle-orm";
import type { Page } from "playwright-core";
import { rows, type Executor } from "../../src/db/client.ts";
import { insertManyRuns } from "./ledger.ts";

/** The dashboard's scale: what test/e2e/ui-scale.test.ts checks and `BENCH_ONLY=ui npm run bench` times. */
export const SCALE_JOBS = 1_000;
export const SCALE_RUNS_PER_JOB = 100;

/** The busiest job of the seeded ledger and its newest run: the pages of one job and one run open these. */
export interface ScaleSeed {
  job: string;
  run: string;
}

/**
 * SCALE_JOBS jobs and SCALE_RUNS_PER_JOB hourly runs of each over the last ~4 days. Each job's next
 * slot is next New Year, so none fires while the dashboard is open and the ledger holds exactly the
 * rows written here.
 */
export async function seedDashboardScale(db: Executor): Promise<ScaleSeed> {
  // Raw SQL: a thousand jobs in one statement.
  await db.execute(sql`insert into cron_jobs (name, agent_id, prompt, cron_expr, timezone, next_fire_at)
    select 'job-' || lpad(n::text, 4, '0'), 'agent-' || (n % 20), 'Check item ' || n || ' and report anything unusual.',
           (n % 60) || ' ' || (n % 24) || ' 1 1 *', 'UTC',
           (date_trunc('year', now() at time zone 'UTC') + interval '1 year' + (n % 24) * interval '1 hour' + (n % 60) * interval '1 minute') at time zone 'UTC'
    from generate_series(1, ${SCALE_JOBS}) as n`);
  const ids = (await rows<{ id: string }>(db, sql`select id::text as id from cron_jobs order by id`)).map((r) => r.id);
  await insertManyRuns(db, {
    jobIds: ids,
    perJob: SCALE_RUNS_PER_JOB,
    end: new Date(Date.now() - 60_000),
    everyMs: 3_600_000,
  });
  const [first] = await rows<ScaleSeed>(
    db,
    sql`select cron_job_id::text as job, max(id)::text as run from cron_job_runs where cron_job_id = ${ids[0]!}::bigint group by cron_job_id`,
  );
  return first!;
}

/**
 * The dashboard's pages at this scale, each with its address and what shows it is ready for a
 * person (its data drawn, its actions there): a job's, its edit form, a run's, the instances, the
 * agents and the lists.
 */
export const scalePages = (page: Page, seed: ScaleSeed): [hash: string, ready: () => Promise<unknown>][] => [
  [`#/job?id=${seed.job}`, () => page.getByTestId("job-runs").locator("li").first().waitFor()],
  [`#/job-edit?id=${seed.job}`, () => page.getByTestId("preview-fires").locator("li").first().waitFor()],
  [`#/run?id=${seed.run}`, () => page.getByTestId("run-story").waitFor()],
  ["#/instances", () => page.getByTestId("instances").locator("tbody tr").first().waitFor()],
  ["#/agents", () => page.getByTestId("agents").locator("tbody tr").nth(19).waitFor()],
  ["#/jobs", () => page.locator("table.jobs tbody tr").nth(49).waitFor()],
  ["#/ledger?range=24h", () => page.locator("table.runs tbody tr").first().waitFor()],
  ["#/now", () => page.getByTestId("summary").getByText("jobs due in 10 min").waitFor()],
];
