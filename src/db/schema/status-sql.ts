import { sql, type SQL } from "drizzle-orm";
import type { RunStatus } from "./enums.ts";

/**
 * Statuses written into a statement as SQL literals (`'Claimed', 'AwaitingApproval', 'Running'`),
 * from one of the lists in enums.ts. Literals, not parameters: the planner proves a partial index's
 * predicate (`status in ('Claimed', …)`) from constants only, and a generic plan of a prepared
 * statement has no values for its parameters.
 */
export function statusLiterals(statuses: readonly RunStatus[]): SQL {
  for (const status of statuses)
    if (!/^[A-Za-z]+$/.test(status)) throw new Error(`not a run status: ${JSON.stringify(status)}`);
  return sql.raw(statuses.map((status) => `'${status}'`).join(", "));
}
