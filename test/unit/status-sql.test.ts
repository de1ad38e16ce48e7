import { PgDialect } from "drizzle-orm/pg-core";
import { describe, expect, it } from "vitest";
import { OPEN_RUN_STATUSES, type RunStatus } from "../../src/db/schema/enums.ts";
import { statusLiterals } from "../../src/db/schema/status-sql.ts";

describe("run statuses in a statement", () => {
  it("are written as the literals a partial index's predicate is proved from, not as parameters", () => {
    const query = new PgDialect().sqlToQuery(statusLiterals([...OPEN_RUN_STATUSES, "Deferred"]));
    expect(query).toEqual({ sql: "'Claimed', 'AwaitingApproval', 'Running', 'Deferred'", params: [] });
    // Only a status's own letters are written into a statement.
    expect(() => statusLiterals(["Running') or ('1" as RunStatus])).toThrow(/not a run status/);
  });
});
