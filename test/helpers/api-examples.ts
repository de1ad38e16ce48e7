/**
 * Example inputs of every API route that takes a body or a query, keyed "METHOD /path" as
 * apiRoutes() lists them: `valid` ones the daemon accepts, `invalid` ones it refuses for a
 * structural reason (a type, a bound, a missing or unknown field) and `refinementOnly` ones it
 * refuses only through a refinement a JSON Schema cannot state. The OpenAPI test checks the
 * document against them; the fuzz test mutates them into malformed requests.
 */

export interface Examples<T> {
  valid: T[];
  invalid?: unknown[];
  refinementOnly?: unknown[];
}

export { bodyExamples, hookExamples } from "./api-body-examples.ts";

export function queryExamples(): Record<string, Examples<Record<string, string>>> {
  return {
    "GET /v1/cron-jobs": {
      valid: [{ limit: "50", after: "10", q: "night" }, { dueBefore: "2030-01-01T00:10:00Z", limit: "20" }, {}],
      invalid: [{ limit: "0" }, { limit: "1001" }, { after: "x" }, { q: "" }, { dueBefore: "soon" }, { page: "2" }],
      refinementOnly: [{ after: "5", dueBefore: "2030-01-01T00:00:00Z" }, { after: "9223372036854775808" }],
    },
    "DELETE /v1/sessions/:id": {
      valid: [{ force: "true" }, { force: "false" }, {}],
      invalid: [{ force: "yes" }, { force: "" }, { cascade: "true" }],
    },
    "DELETE /v1/cron-jobs/:id": {
      valid: [{ force: "true" }, { force: "false" }, {}],
      invalid: [{ force: "yes" }, { force: "" }, { forced: "true" }],
    },
    "GET /v1/cron-jobs/:id/runs": {
      valid: [
        { status: "Cancelled", limit: "5", before: "12" },
        { from: "2030-01-01T00:00:00Z", to: "2030-01-02T00:00:00+02:00" },
        {},
      ],
      invalid: [
        { jobId: "1" },
        { status: "Bogus" },
        { limit: "0" },
        { limit: "1.5" },
        { before: "-1" },
        { from: "yesterday" },
      ],
      refinementOnly: [{ from: "2030-01-02T00:00:00Z", to: "2030-01-01T00:00:00Z" }],
    },
    "GET /v1/jobs-file": {
      valid: [{}, { jobId: "42" }, { name: "nightly" }],
      invalid: [{ jobId: "abc" }, { jobId: "" }, { name: "" }, { names: "nightly" }],
    },
    "GET /v1/runs": {
      valid: [
        { jobId: "9223372036854775807", status: "Succeeded", limit: "1000" },
        { from: "2030-01-01T00:00:00Z", to: "2030-01-01T01:00:00Z", before: "7" },
      ],
      invalid: [{ limit: "1001" }, { jobId: "abc" }, { limit: "NaN" }, { limit: "Infinity" }, { to: "2030-01-01" }],
      refinementOnly: [
        { jobId: "9223372036854775808" },
        { before: "9999999999999999999" },
        { from: "2030-01-01T00:00:00Z", to: "2030-01-01T00:00:00Z" },
      ],
    },
    "GET /v1/run-summary": {
      valid: [{}, { from: "2030-01-01T00:00:00Z", to: "2030-02-01T00:00:00Z", jobId: "3" }],
      invalid: [{ jobId: "abc" }, { to: "2030-01-01" }, { status: "Failed" }],
      refinementOnly: [{ from: "2030-01-02T00:00:00Z", to: "2030-01-01T00:00:00Z" }, { jobId: "9223372036854775808" }],
    },
    "GET /v1/run-timeline": {
      valid: [
        { from: "2030-01-01T00:00:00Z", to: "2030-01-01T06:00:00Z" },
        {
          from: "2030-01-01T00:00:00Z",
          to: "2030-01-02T00:00:00Z",
          buckets: "96",
          jobId: "3",
          status: "Cancelled",
          limit: "10",
          after: "2",
        },
      ],
      invalid: [
        { from: "2030-01-01T00:00:00Z" },
        { to: "2030-01-01T00:00:00Z" },
        { from: "2030-01-01T00:00:00Z", to: "2030-01-02T00:00:00Z", buckets: "0" },
        { from: "2030-01-01T00:00:00Z", to: "2030-01-02T00:00:00Z", buckets: "501" },
        { from: "2030-01-01T00:00:00Z", to: "2030-01-02T00:00:00Z", limit: "101" },
      ],
      refinementOnly: [{ from: "2030-01-02T00:00:00Z", to: "2030-01-01T00:00:00Z" }],
    },
    "GET /v1/cron-preview": {
      valid: [{ cron: "0 9 * * 1-5", timezone: "Asia/Tokyo", count: "3" }, { every: "10m" }],
      invalid: [
        { cron: "* * * * *", count: "0" },
        { cron: "* * * * *", n: "3" },
        { cron: "* * * * *", count: "1e309" },
      ],
      refinementOnly: [{}, { cron: "* * * * *", every: "1m" }],
    },
    "GET /v1/sessions/:id/messages": {
      valid: [{ limit: "10", after: "3" }],
      invalid: [{ after: "x" }, { limit: "many" }, { after: "1.0" }],
    },
    "GET /v1/events": {
      valid: [{ after: "0", kind: "sessionCleared", session: "s1", limit: "10" }],
      invalid: [{ kind: "sessionCreated" }, { after: "-5" }, { session: "" }],
    },
    "GET /v1/notify": {
      valid: [{ session: "s1", status: "Pending", limit: "20", before: "100" }],
      invalid: [{ status: "Sleeping" }, { before: "1e3" }, { limit: "-1" }],
    },
    "GET /v1/sessions/:id/todos": {
      valid: [{ status: "all", limit: "5" }, { status: "done" }],
      invalid: [{ status: "finished" }, { limit: "-1" }],
    },
    "GET /v1/plugin-generations": {
      valid: [{ limit: "5" }, {}],
      invalid: [{ limit: "0" }, { limit: "501" }, { limit: "x" }, { plugin: "p" }],
    },
    "GET /v1/alerts": {
      valid: [{ open: "true", limit: "20", before: "100" }, {}],
      invalid: [{ open: "yes" }, { limit: "0" }, { limit: "501" }, { before: "x" }],
    },
    "GET /v1/hook-decisions": {
      valid: [{ hook: "cronJobFiring", plugin: "p", subject: "1", limit: "10", before: "5" }],
      invalid: [{ hook: "noSuchHook" }, { plugin: "" }, { limit: "99999" }, { plugin: "x".repeat(65) }],
    },
  };
}

/** Variations of a valid object: an unknown field, each field missing, each field of a wrong type. */
export function mutations(
  valid: Record<string, unknown>,
  asQuery: boolean,
): { label: string; field: string; value: Record<string, unknown> }[] {
  const out: { label: string; field: string; value: Record<string, unknown> }[] = [
    { label: "unknown field zzUnknown", field: "zzUnknown", value: { ...valid, zzUnknown: asQuery ? "1" : 1 } },
  ];
  for (const key of Object.keys(valid)) {
    const { [key]: _, ...rest } = valid;
    out.push({ label: `without ${key}`, field: key, value: rest });
    const v = valid[key];
    const wrong = asQuery
      ? [`${String(v)}x`, "", "%"]
      : typeof v === "string"
        ? [42, null, [v], { v }]
        : typeof v === "number"
          ? [String(v), true, -1e308, 1.5e300, null]
          : typeof v === "boolean"
            ? ["true", 0, null]
            : Array.isArray(v)
              ? [{}, "x", [], [null], [42]]
              : [[], "x", 7];
    for (const w of wrong)
      out.push({ label: `${key} = ${JSON.stringify(w)}`, field: key, value: { ...valid, [key]: w } });
  }
  return out;
}
