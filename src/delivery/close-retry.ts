import type { Clock } from "../clock.ts";
import { databaseUnavailable } from "../db/errors.ts";
import type { Logger } from "../log.ts";

const FIRST_WAIT_MS = 250;
const LONGEST_WAIT_MS = 5_000;

/**
 * Writes an outcome this instance holds (the agent answered; only the ledger is out of reach: a
 * restart, a dropped connection) until it lands, waiting 0.25 s, then twice as long each time up to
 * 5 s. Giving up would leave the row open until pg-boss expires its job, and crash truth would then
 * record Unknown an outcome that was known. `stop` (a shutdown's hand-back) ends the wait: the last
 * error is thrown and the row is left to crash truth. An error that is not about the database's
 * availability is thrown at once. `fields` go on its lines (a child logger would be built for every
 * outcome, though these lines are rare).
 */
export async function untilRecorded(
  write: () => Promise<void>,
  options: { clock: Clock; log: Logger; stop: AbortSignal; fields?: Record<string, unknown> },
): Promise<void> {
  const { clock, log, stop, fields } = options;
  for (let tries = 1, wait = FIRST_WAIT_MS; ; tries++, wait = Math.min(wait * 2, LONGEST_WAIT_MS)) {
    try {
      await write();
      if (tries > 1) log.info({ ...fields, tries }, "outcome recorded once the database was back");
      return;
    } catch (err) {
      const unavailable = databaseUnavailable(err);
      if (!unavailable || stop.aborted) throw err;
      if (tries === 1) log.warn({ ...fields, cause: unavailable }, "outcome held until the database is back");
      await new Promise<void>((resolve) => {
        const done = () => {
          clock.clearTimeout(timer);
          stop.removeEventListener("abort", done);
          resolve();
        };
        const timer = clock.setTimeout(done, wait);
        stop.addEventListener("abort", done);
      });
    }
  }
}
