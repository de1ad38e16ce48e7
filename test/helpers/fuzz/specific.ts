/** Route-specific mistakes: schedules, time zones, intervals, delays, and conflicts with what exists. */
import { json, JSON_TYPE, type FuzzContext } from "./shared.ts";

/** Cron expressions, time zones and intervals that are not valid, on add and on preview. */
export function scheduleCases(ctx: FuzzContext): void {
  const { add } = ctx;
  const job = { name: "fuzz", agentId: "a1", prompt: "p" };
  for (const cron of [
    "61 * * * *",
    "* * *",
    "*/0 * * * *",
    "a b c d e",
    "* * * * * * * *",
    "0 0 32 * *",
    "0 25 * * *",
    "   ",
    "@never",
    "0 0 * * 8",
  ]) {
    add({
      name: `cron add: cron ${JSON.stringify(cron)}`,
      method: "POST",
      path: "/v1/cron-jobs",
      body: json({ ...job, cron }),
      headers: JSON_TYPE,
      status: [400],
      message: /cron/,
    });
    add({
      name: `cron preview: cron ${JSON.stringify(cron)}`,
      method: "GET",
      path: `/v1/cron-preview?${new URLSearchParams({ cron })}`,
      status: [400],
      message: /cron/,
    });
  }
  for (const timezone of ["Mars/Olympus", "UTC+25", "Europe/Berln", "../../etc/passwd", "", "Local"]) {
    add({
      name: `cron add: time zone ${JSON.stringify(timezone)}`,
      method: "POST",
      path: "/v1/cron-jobs",
      body: json({ ...job, cron: "* * * * *", timezone }),
      headers: JSON_TYPE,
      status: [400],
      message: /timezone|time zone/i,
    });
    add({
      name: `cron preview: time zone ${JSON.stringify(timezone)}`,
      method: "GET",
      path: `/v1/cron-preview?${new URLSearchParams({ cron: "* * * * *", timezone })}`,
      status: [400],
      message: /timezone|time zone/i,
    });
  }
  for (const every of ["0s", "-5m", "forever", "10", "0", "1 hour", "P1D"]) {
    add({
      name: `cron add: every ${JSON.stringify(every)}`,
      method: "POST",
      path: "/v1/cron-jobs",
      body: json({ ...job, every }),
      headers: JSON_TYPE,
      status: [400],
      message: /every|interval|duration/i,
    });
  }
}

/** Delays out of range and notes that are not objects or name no session. */
export function notifyCases(ctx: FuzzContext): void {
  const { add, ids, maxDelaySeconds } = ctx;
  for (const delay of [
    "1e400",
    "-1e400",
    "-0.5",
    String(maxDelaySeconds + 0.001),
    "1e308",
    '"NaN"',
    '"Infinity"',
    '"-1"',
    "[]",
    "{}",
    "true",
  ]) {
    add({
      name: `notify: delaySeconds ${delay}`,
      method: "POST",
      path: "/v1/notify",
      body: Buffer.from(`{"sessionId":${JSON.stringify(ids.session)},"message":"m","delaySeconds":${delay}}`),
      headers: JSON_TYPE,
      status: [400],
      message: /delaySeconds/,
    });
  }
  add({
    name: "notify: a body nested 500 000 deep",
    method: "POST",
    path: "/v1/notify",
    body: Buffer.from("[".repeat(500_000) + "]".repeat(500_000)),
    headers: JSON_TYPE,
    status: [400],
    message: /must be an object, not/,
  });
  add({
    name: "notify: NUL in a key",
    method: "POST",
    path: "/v1/notify",
    body: Buffer.from(`{"sessionId":${JSON.stringify(ids.session)},"message":"m","delaySeconds":1,"a\\u0000b":1}`),
    headers: JSON_TYPE,
    status: [400],
    message: /NUL character/,
  });
  add({
    name: "agents: NUL in an env name",
    method: "PUT",
    path: `/v1/agents/${ids.apiAgent}`,
    body: json({ executor: "command", argv: ["x"], env: { "A\u0000": "b" } }),
    headers: JSON_TYPE,
    status: [400],
    message: /env.*NUL character/,
  });
}

/** Conflicts with what exists, and settings each route refuses. */
export function conflictCases(ctx: FuzzContext): void {
  const { add, ids } = ctx;
  add({
    name: "notify: unknown session",
    method: "POST",
    path: "/v1/notify",
    body: json({ sessionId: "no-such-session", message: "m", delaySeconds: 5 }),
    headers: JSON_TYPE,
    status: [404],
    message: /no session with id "no-such-session"/,
  });
  add({
    name: "sessions: duplicate id",
    method: "POST",
    path: "/v1/sessions",
    body: json({ id: ids.session, agentId: "a1" }),
    headers: JSON_TYPE,
    status: [409],
    message: /already exists/,
  });
  add({
    name: "pause: blank note",
    method: "POST",
    path: `/v1/cron-jobs/${ids.cronJob}/pause`,
    body: json({ note: "   " }),
    headers: JSON_TYPE,
    status: [400],
    message: /note/,
  });
  add({
    name: "agents: webhook with an ftp URL",
    method: "PUT",
    path: `/v1/agents/${ids.apiAgent}`,
    body: json({ executor: "webhook", url: "ftp://example.com/x" }),
    headers: JSON_TYPE,
    status: [400],
    message: /url/,
  });
  add({
    name: "agents: command timeout that is not a duration",
    method: "PUT",
    path: `/v1/agents/${ids.apiAgent}`,
    body: json({ executor: "command", argv: ["x"], timeout: "soon" }),
    headers: JSON_TYPE,
    status: [400],
    message: /not a duration/,
  });
}
