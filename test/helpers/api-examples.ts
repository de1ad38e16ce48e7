/**
 * Example inputs of every API route that takes a body or a query, keyed "METHOD /path" as
 * apiRoutes() lists them: `valid` ones the daemon accepts, `invalid` ones it refuses for a
 * structural reason (a type, a bound, a missing or unknown field) and `refinementOnly` ones it
 * refuses only through a refinement a JSON Schema cannot state. The OpenAPI test checks the
 * document against them; the fuzz test mutates them into malformed requests.
 */
import type { RuntimeHook } from "../../src/plugins/contexts.ts";

export interface Examples<T> {
  valid: T[];
  invalid?: unknown[];
  refinementOnly?: unknown[];
}

/** One valid context per runtime hook (POST /v1/hooks/:hook). */
export function hookExamples(sessionId: string): Record<RuntimeHook, Record<string, unknown>> {
  const ssh = { sessionId, agentId: "a1", sshHostId: "h1", hostDisplayName: "box" };
  return {
    systemPrompt: { sessionId, agentId: "a1", sessionKind: "direct", systemPrompt: "be brief" },
    userMessageInbound: { sessionId, channelId: null, text: "hello", mediaIds: [] },
    interAgentMessage: {
      senderSessionId: sessionId,
      senderAgentId: "a1",
      targetSessionId: "other",
      isSubagentReport: false,
      text: "report",
    },
    assistantMessageOutbound: { sessionId, channelId: "c1", text: "done" },
    sshConnectionOpening: { ...ssh, hostname: "box.example", port: 22, connectionType: "direct", username: "root" },
    sshCommandSending: { ...ssh, kind: "command", command: "ls", path: null, content: null, intent: "look around" },
    sshCommandCompleted: {
      ...ssh,
      kind: "command",
      command: "ls",
      path: null,
      exitCode: 0,
      output: "",
      errorOutput: null,
      isTruncated: false,
      durationMs: 5,
    },
  };
}

export function bodyExamples(options: {
  maxDelaySeconds: number;
  sessionId: string;
}): Record<string, Examples<Record<string, unknown>>> {
  const { maxDelaySeconds: max, sessionId } = options;
  const job = { name: "n", agentId: "a", prompt: "p" };
  return {
    "POST /v1/cron-jobs": {
      valid: [
        { ...job, cron: "*/5 * * * *", timezone: "Europe/Berlin", overlapPolicy: "allow", catchupMax: 3, paused: true },
        {
          ...job,
          every: "30m",
          kind: "heartbeat",
          activeHours: "09:00-18:00",
          skipIfBusy: true,
          jitter: "30s",
          startsAt: "2030-01-01T00:00:00Z",
          maxRuns: 5,
        },
      ],
      invalid: [
        { ...job, name: "", cron: "* * * * *" },
        { ...job, cron: "* * * * *", overlapPolicy: "sometimes" },
        { ...job, cron: "* * * * *", catchupMax: 0 },
        { ...job, cron: "* * * * *", maxRuns: 0 },
        { ...job, cron: "* * * * *", startsAt: "tomorrow" },
        { ...job, cron: "* * * * *", name: "x".repeat(201) },
        { ...job, cron: "* * * * *", prompt: "x".repeat(100_001) },
        [],
        "x",
        null,
      ],
      refinementOnly: [
        job,
        { ...job, cron: "* * * * *", every: "1m" },
        { ...job, every: "1m", activeHours: "25:00-26:00" },
        { ...job, every: "1m", sessionMode: "fixed" },
        { ...job, every: "1m", jitter: "2h" },
        { ...job, every: "1m", startsAt: "2030-01-02T00:00:00Z", endsAt: "2030-01-01T00:00:00Z" },
      ],
    },
    "POST /v1/apply": {
      valid: [
        { files: [{ path: "/srv/jobs.toml", jobs: [{ name: "from-file", agent: "a", prompt: "p", every: "1h" }] }] },
        { files: [{ path: "/srv/empty.toml", jobs: [] }], prune: true, dryRun: true, force: false },
      ],
      invalid: [
        { files: [] },
        { files: [{ path: "/srv/jobs.toml" }] },
        { files: [{ path: "/srv/jobs.toml", jobs: [] }], prune: "yes" },
        { files: [{ path: "/srv/jobs.toml", jobs: [] }], plan: true },
        {},
      ],
      refinementOnly: [{ files: [{ path: "jobs.toml", jobs: [] }] }],
    },
    "PATCH /v1/cron-jobs/:id": {
      valid: [
        { prompt: "check the replicas too", overlapPolicy: "allow", catchupMax: 3 },
        { cron: "*/10 * * * *", timezone: "Europe/Berlin", jitter: null, maxRuns: null },
        { every: "2h", activeHours: "09:00-18:00", skipIfBusy: true, startsAt: null, endsAt: null, force: true },
      ],
      invalid: [
        { prompt: "" },
        { overlapPolicy: "sometimes" },
        { catchupMax: 0 },
        { maxRuns: 0 },
        { startsAt: "tomorrow" },
        { name: "x".repeat(201) },
        { paused: true },
        [],
        "x",
        null,
      ],
      refinementOnly: [{ cron: "* * * * *", every: "1m" }, { activeHours: "25:00-26:00" }, { jitter: "2h" }],
    },
    "POST /v1/cron-jobs/:id/pause": {
      valid: [{ note: "maintenance" }, {}, { until: "2030-01-01T00:00:00Z", note: "until the new year" }],
      invalid: [{ note: 5 }, { note: "x".repeat(1001) }, { reason: "x" }, { until: "soon" }],
    },
    "POST /v1/cron-jobs/:id/backfill": {
      valid: [
        { from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z" },
        { from: "2026-01-01T00:00:00+02:00", to: "2026-01-01T06:00:00+02:00", max: 1000, dryRun: true },
      ],
      invalid: [
        { from: "yesterday", to: "2026-01-02T00:00:00Z" },
        { from: "2026-01-01T00:00:00Z" },
        { from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z", max: 1001 },
        { from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z", max: 0 },
        { from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z", dryRun: "yes" },
        { from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z", slots: 3 },
      ],
      refinementOnly: [{ from: "2026-01-02T00:00:00Z", to: "2026-01-01T00:00:00Z" }],
    },
    "POST /v1/cron-jobs/:id/skip": {
      valid: [{ count: 3, reason: "holiday" }, { until: "2099-01-01T00:00:00Z" }, { cancel: true }, { count: 0 }],
      invalid: [{ count: -1 }, { count: 1.5 }, { until: "soon" }, { count: 1, reason: "" }, { count: 1, why: "x" }],
      refinementOnly: [{}, { count: 2, until: "2099-01-01T00:00:00Z" }, { reason: "only a reason" }],
    },
    "POST /v1/sessions": {
      valid: [{ id: "s-new", agentId: "a1", kind: "channel" }, { agentId: "a1" }],
      invalid: [
        { agentId: "a1", kind: "Not Snake" },
        { id: "x".repeat(201), agentId: "a" },
      ],
    },
    "POST /v1/sessions/:id/messages": {
      valid: [{ messages: [{ role: "user", text: "hi" }] }],
      invalid: [
        { messages: [] },
        { messages: [{ role: "robot", text: "x" }] },
        { messages: [{ role: "user", text: "x", extra: 1 }] },
        { messages: Array.from({ length: 1001 }, () => ({ role: "user", text: "" })) },
      ],
    },
    "POST /v1/sessions/:id/subagents": { valid: [{ sessionId: "child" }], invalid: [{ sessionId: "" }, {}] },
    "POST /v1/sessions/:id/peer-threads": { valid: [{ sessionId: "peer" }], invalid: [{ sessionId: 7 }] },
    "POST /v1/sessions/:id/clear": {
      valid: [{ trailingText: "start over" }, { trailingText: null }, {}],
      invalid: [{ trailingText: 1 }, { text: "x" }],
    },
    "POST /v1/notify": {
      valid: [
        { sessionId, message: "wake up", delaySeconds: 600 },
        { sessionId, message: "now", delaySeconds: 0 },
        { sessionId, message: "m", delaySeconds: max },
      ],
      invalid: [
        { sessionId, message: "m", delaySeconds: -1 },
        { sessionId, message: "m", delaySeconds: -0.001 },
        { sessionId, message: "m", delaySeconds: max + 1 },
        { sessionId, message: "m", delaySeconds: 1e308 },
        { sessionId, message: "m", delaySeconds: "10" },
        { sessionId, message: "m", delaySeconds: "NaN" },
        { sessionId, message: "m", delaySeconds: "Infinity" },
        { sessionId, message: "m", delaySeconds: null },
        { sessionId, message: "", delaySeconds: 1 },
        { sessionId, message: "x".repeat(100_001), delaySeconds: 1 },
      ],
    },
    "POST /v1/intercept/:name": {
      valid: [{ input: { name: "shell", input: { command: "ls" } }, current: "allow" }, {}],
      invalid: [[], "text", 1],
    },
    "POST /v1/observe/:name": {
      valid: [{ name: "shell", sessionId: "s1" }, {}],
      invalid: [[], "text", 1],
    },
    "POST /v1/sessions/:id/todos": {
      valid: [{ texts: ["one", "two"] }],
      invalid: [
        { texts: [] },
        { texts: [""] },
        { texts: Array.from({ length: 201 }, () => "t") },
        { texts: ["x".repeat(10_001)] },
        { texts: "one" },
      ],
    },
    "POST /v1/hooks/:hook": {
      valid: Object.values(hookExamples(sessionId)),
      invalid: [
        { ...hookExamples(sessionId).systemPrompt, sessionId: 1 },
        { ...hookExamples(sessionId).sshConnectionOpening, port: 70000 },
        { ...hookExamples(sessionId).sshCommandSending, kind: "reboot" },
        {},
      ],
    },
    "POST /v1/plugins/install": {
      valid: [
        { folder: "quiet-hours", files: [{ path: "index.js", content: "Ly8gbm90aGluZwo=" }], dryRun: true },
        {
          folder: "cmd-gate",
          files: [
            { path: "plugin.json", content: "e30=" },
            { path: "bin/gate.sh", content: "ZXhpdCAwCg==", executable: true },
          ],
          force: true,
        },
      ],
      invalid: [
        { folder: "x", files: [] },
        { folder: "", files: [{ path: "index.js", content: "" }] },
        { folder: "x", files: [{ path: "index.js" }] },
        { folder: "x", files: [{ path: "index.js", content: "", mode: 755 }] },
        { folder: "x", files: [{ path: "index.js", content: "" }], dryRun: "yes" },
      ],
      refinementOnly: [
        { folder: "x", files: [{ path: "../escape.js", content: "" }] },
        { folder: "x", files: [{ path: "/etc/passwd", content: "" }] },
      ],
    },
    "POST /v1/plugins/:name/approve": {
      valid: [{ dryRun: true }, { digest: `sha256:${"0".repeat(64)}` }, {}],
      invalid: [{ dryRun: "yes" }, { digest: 5 }, { everything: true }, { digest: "sha256:xyz" }, { digest: "md5:00" }],
    },
    "PUT /v1/agents/:id": {
      valid: [
        { executor: "log" },
        { executor: "webhook", url: "https://example.com/hook", secret: "0123456789abcdef", timeout: "10s" },
        { executor: "command", argv: ["./agent.sh"], timeout: 5000, env: { A: "b" } },
      ],
      invalid: [
        { executor: "carrier-pigeon" },
        { executor: "webhook", url: "not a url" },
        { executor: "webhook", url: "https://e.com", secret: "short" },
        { executor: "command", argv: [] },
        { executor: "log", url: "x" },
        { executor: "command", argv: ["x"], timeout: -5 },
      ],
      refinementOnly: [
        { executor: "webhook", url: "ftp://example.com/x" },
        { executor: "command", argv: ["x"], timeout: "soon" },
      ],
    },
  };
}

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
