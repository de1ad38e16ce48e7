/**
 * The bodies of bodyExamples (see api-examples.ts), one function per domain; bodyExamples lists them
 * in the order of the routes.
 */
import type { RuntimeHook } from "../../src/plugins/contexts.ts";
import type { Examples } from "./api-examples.ts";

type Bodies = Record<string, Examples<Record<string, unknown>>>;

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

export function bodyExamples(options: { maxDelaySeconds: number; sessionId: string }): Bodies {
  const { maxDelaySeconds: max, sessionId } = options;
  return {
    ...cronJobBodies(),
    ...cronActionBodies(),
    ...sessionBodies(),
    ...notifyBodies(max, sessionId),
    ...dialectBodies(),
    ...todoBodies(),
    ...hookBodies(sessionId),
    ...pluginBodies(),
    ...agentBodies(),
  };
}

/** The job itself: created, applied from jobs files, edited. */
function cronJobBodies(): Bodies {
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
  };
}

/** What is done to a job's slots: pause, backfill, skip. */
function cronActionBodies(): Bodies {
  return {
    "POST /v1/cron-jobs/:id/pause": {
      valid: [{ note: "maintenance" }, {}, { until: "2030-01-01T00:00:00Z", note: "until the new year" }],
      invalid: [{ note: 5 }, { note: "x".repeat(1001) }, { reason: "x" }, { until: "soon" }],
    },
    "POST /v1/runs/:id/reject": {
      valid: [{ reason: "release freeze" }, {}],
      invalid: [{ reason: 5 }, { reason: "x".repeat(501) }, { why: "x" }],
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
    "POST /v1/cron-jobs/:id/trigger": {
      valid: [{}, { pr: { title: "fix the build" }, build: 812 }],
      invalid: [[1], "text", 5],
    },
    "POST /v1/prompt-preview": {
      valid: [
        { prompt: "Summarise {{slot}}", slot: "2030-01-01T09:00:00Z" },
        {
          prompt: "Review {{payload.pr.title}}",
          slot: "2030-01-01T09:00:00+02:00",
          timezone: "Europe/Berlin",
          payload: { pr: { title: "x" } },
        },
      ],
      invalid: [
        { prompt: "hi" },
        { prompt: "hi", slot: "tomorrow" },
        { prompt: "hi", slot: "2030-01-01T09:00:00Z", payload: [1] },
        { prompt: "hi", slot: "2030-01-01T09:00:00Z", timezone: "" },
        { prompt: "hi", slot: "2030-01-01T09:00:00Z", extra: 1 },
      ],
    },
    "POST /v1/cron-jobs/:id/tokens": {
      valid: [{ name: "ci" }, {}],
      invalid: [{ name: "" }, { name: "has space" }, { name: 5 }, { label: "ci" }],
    },
    "POST /v1/cron-jobs/:id/skip": {
      valid: [{ count: 3, reason: "holiday" }, { until: "2099-01-01T00:00:00Z" }, { cancel: true }, { count: 0 }],
      invalid: [{ count: -1 }, { count: 1.5 }, { until: "soon" }, { count: 1, reason: "" }, { count: 1, why: "x" }],
      refinementOnly: [{}, { count: 2, until: "2099-01-01T00:00:00Z" }, { reason: "only a reason" }],
    },
  };
}

/** Sessions and what they hold: messages, subagents, peer threads, clears. */
function sessionBodies(): Bodies {
  return {
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
  };
}

/** Notify timers, with the delay's bounds from the configuration. */
function notifyBodies(max: number, sessionId: string): Bodies {
  return {
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
  };
}

/** The other hook systems' calls (any JSON object). */
function dialectBodies(): Bodies {
  return {
    "POST /v1/intercept/:name": {
      valid: [{ input: { name: "shell", input: { command: "ls" } }, current: "allow" }, {}],
      invalid: [[], "text", 1],
    },
    "POST /v1/observe/:name": {
      valid: [{ name: "shell", sessionId: "s1" }, {}],
      invalid: [[], "text", 1],
    },
  };
}

/** A session's todos. */
function todoBodies(): Bodies {
  return {
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
  };
}

/** The runtime hooks, one valid context each. */
function hookBodies(sessionId: string): Bodies {
  return {
    "POST /v1/hooks/:hook": {
      valid: Object.values(hookExamples(sessionId)),
      invalid: [
        { ...hookExamples(sessionId).systemPrompt, sessionId: 1 },
        { ...hookExamples(sessionId).sshConnectionOpening, port: 70000 },
        { ...hookExamples(sessionId).sshCommandSending, kind: "reboot" },
        {},
      ],
    },
  };
}

/** Installing and approving plugins. */
function pluginBodies(): Bodies {
  return {
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
  };
}

/** Agents set over the API, one per executor. */
function agentBodies(): Bodies {
  return {
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
