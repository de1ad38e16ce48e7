// The page reads and writes only missiond's public JSON API (GET /v1/openapi.json documents it).
//
// Auth: over the Unix socket the caller's uid decides. A TCP listener requires `Authorization: Bearer
// <token>` on every request (a token of [[api.tokens]] or api_token), and the token's scope decides
// which views the page shows (GET /v1/whoami); the page asks for the token once, keeps it in this tab's
// sessionStorage (gone when the tab closes; never a cookie, so no other site can make the browser
// send it) and adds the header to each fetch.

export const RUN_STATUSES = [
  "Claimed",
  "Running",
  "Succeeded",
  "Failed",
  "TimedOut",
  "Cancelled",
  "Skipped",
  "Missed",
  "Deferred",
  "Unknown",
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export interface LastRun {
  id: string;
  status: RunStatus;
  scheduledFor: string;
  finishedAt: string | null;
  reason: string | null;
  decidedBy: string | null;
}

export interface Job {
  id: string;
  name: string;
  kind: "cron_job" | "heartbeat";
  agentId: string;
  prompt: string;
  cron: string | null;
  every: string | null;
  timezone: string;
  overlapPolicy: string;
  catchupPolicy: string;
  paused: boolean;
  pausedNote: string | null;
  activeHours: string | null;
  skipIfBusy: boolean;
  jitter: string | null;
  sessionMode: string;
  sessionId: string | null;
  startsAt: string | null;
  endsAt: string | null;
  maxRuns: number | null;
  runCount: number;
  nextFireAt: string | null;
  createdAt: string;
  lastRun?: LastRun | null;
}

export interface JobPage {
  jobs: Job[];
  total: number;
  next: string | null;
}

export interface Run {
  id: string;
  cronJobId: string;
  jobName?: string;
  scheduledFor: string;
  trigger: "schedule" | "manual" | "deferred";
  status: RunStatus;
  reason: string | null;
  decidedBy: string | null;
  promptFired: string | null;
  claimedBy: string;
  claimedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  latenessMs: number | null;
  backfilled: boolean;
  sessionId: string | null;
  executor: string | null;
  exitCode: number | null;
  output: string | null;
}

export interface Timeline {
  from: string;
  to: string;
  buckets: number;
  bucketMs: number;
  lanes: {
    jobId: string;
    name: string;
    removed: boolean;
    total: number;
    cells: [number, RunStatus, number][];
    revisions: { revision: number; at: string; action: string; actor: string; note: string | null }[];
  }[];
  next: string | null;
}

export interface Plugin {
  name: string;
  version: string | null;
  kind: "isolate" | "command" | null;
  order: number | null;
  required: boolean;
  shadow: boolean;
  permissions: string[];
  hooks: string[];
  state: "active" | "suspended" | "restarting" | "failed" | "missing";
  error: string | null;
  restarts: number;
  consecutiveFailures: number;
  suspendedUntil: string | null;
  /** Asks for more than was approved (runs with the approved grants), or held until approved (absent from older daemons). */
  needsApproval?: boolean;
  /** Changed since approved. */
  changed?: boolean;
  /** What goes beyond the approval, when it needs one. */
  requested?: { added: string[] } | null;
  approval?: { revision: number; source: string; actor: string; at: string; digest: string } | null;
}

export const DECISION_OUTCOMES = ["passed", "changed", "cancelled", "deferred", "skipped"] as const;
export type DecisionOutcome = (typeof DECISION_OUTCOMES)[number];

export interface Decision {
  id: string;
  plugin: string;
  hook: string;
  subjectId: string | null;
  at: string;
  durationMs: number;
  outcome: DecisionOutcome;
  fields: string[] | null;
  reason: string | null;
  shadow: boolean;
}

export interface Decisions {
  decisions: Decision[];
  counts: Record<DecisionOutcome, number>;
}

export interface Doctor {
  ok: boolean;
  overdueJobs: { id: string; name: string; nextFireAt: string; lateBySeconds: number }[];
  stuckRuns: { id: string; cronJobId: string; status: string; since: string; claimedBy: string }[];
  failingAgents: { agentId: string; failures: number; lastFailureAt: string; lastStatus: string }[];
  overdueTimers: { id: string; sessionId: string; dueAt: string }[];
  plugins: { name: string; state: string; error: string | null }[];
  clockSkewMs: number;
  schedulerArmed: boolean;
}

export interface Timer {
  id: string;
  sessionId: string;
  agentId: string;
  status: string;
  message: string;
  dueAt: string | null;
  createdAt: string;
}

export interface Session {
  id: string;
  agentId: string;
  kind: string;
  updatedAt: string;
  messageCount: number;
  openTodos: number;
}

export interface Todo {
  id: string;
  text: string;
  status: string;
  createdAt: string;
}

/** GET /v1/whoami: the scope of the token this tab signed in with, and its name (`token:ops`). */
export interface Whoami {
  scope: "agent" | "operator";
  actor: string;
}

const TOKEN_KEY = "missiond.apiToken";

/** The API answered 401: the page needs the listener's token. */
export class AuthRequired extends Error {}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value: string) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

// Relative to the page (/ui/), so the page also works behind a proxy that mounts it under a prefix.
const apiBase = () => new URL("../", document.baseURI);

export type Query = Record<string, string | number | undefined | null>;

export function url(path: string, query: Query = {}): string {
  const target = new URL(path.replace(/^\//, ""), apiBase());
  for (const [key, value] of Object.entries(query))
    if (value !== undefined && value !== null && value !== "") target.searchParams.set(key, String(value));
  return target.toString();
}

async function call<T>(method: "GET" | "POST", path: string, query: Query, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  const bearer = token.get();
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(url(path, query), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
  });
  if (response.status === 401) throw new AuthRequired("the API wants the bearer token of this listener");
  if (response.status === 204) return undefined as T;
  const payload = (await response.json().catch(() => null)) as { error?: { code: string; message: string } } | null;
  if (!response.ok)
    throw new ApiError(
      response.status,
      payload?.error?.code ?? "HTTP",
      payload?.error?.message ?? `${response.status} ${response.statusText}`,
    );
  return payload as T;
}

export const api = {
  get: <T>(path: string, query: Query = {}) => call<T>("GET", path, query),
  post: <T>(path: string, body: unknown = {}) => call<T>("POST", path, {}, body),
};
