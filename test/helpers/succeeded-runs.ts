import { sql } from "drizzle-orm";
import { rows, type Executor } from "../../src/db/client.ts";
import { waitFor } from "./wait.ts";

/** Waits until at least `n` runs of the ledger have Succeeded; resolves to how many have. */
export function waitSucceeded(db: Executor, n: number, timeoutMs = 20_000): Promise<number> {
  return waitFor(
    async () => {
      const [found] = await rows<{ n: number }>(
        db,
        sql`select count(*)::int as n from cron_job_runs where status = 'Succeeded'`,
      );
      return found!.n >= n ? found!.n : 0;
    },
    `${n} runs Succeeded`,
    timeoutMs,
  );
}
