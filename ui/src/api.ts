// The page reads and writes only missiond's public JSON API (GET /v1/openapi.json documents it).
//
// Auth: over the Unix socket the caller's uid decides. A TCP listener requires `Authorization: Bearer
// <token>` on every request (a token of [[api.tokens]] or api_token), and the token's scope decides
// which views the page shows (GET /v1/whoami); the page asks for the token once, keeps it in this tab's
// sessionStorage (gone when the tab closes; never a cookie, so no other site can make the browser
// send it) and adds the header to each fetch.

import type {
  DecisionPage,
  DoctorReport,
  Job as JobAnswer,
  JobPage as JobPageAnswer,
  ListedJob,
  ListedRun,
  ListedSession,
  Run as RunAnswer,
} from "./api-types.ts";

// The closed lists are the daemon's own (one declaration each).
export { DECISION_OUTCOMES, RUN_STATUSES, type DecisionOutcome, type RunStatus } from "../../src/db/schema/enums.ts";

/**
 * The answers' types are generated from the daemon's declarations (ui/src/api-types.ts); these
 * names are what the views read them by.
 */
export type {
  Alert,
  AlertList,
  Decision,
  LastRun,
  Plugin,
  RunAttempt,
  Timeline,
  Timer,
  Todo,
  Whoami,
} from "./api-types.ts";
export type {
  GetCronJobsByIdRevisionsAnswer as RevisionList,
  GetInstancesAnswer as Instances,
  GetAgentsAnswer as Agents,
  GetAgentActivityAnswer as AgentActivity,
  GetRunsByIdAnswer as RunDetail,
  PostCronJobsByIdBackfillAnswer as Backfill,
  Revision,
} from "./api-types.ts";
export { JOB_FORM_FIELDS, type JobFormField } from "./api-types.ts";
/** A job as GET /v1/cron-jobs/:id answers it, or as a list page does (with its latest run). */
export type Job = JobAnswer & Partial<Pick<ListedJob, "lastRun">>;
/** GET /v1/cron-jobs, its jobs read as any job (the views show a listed job and a fetched one alike). */
export type JobPage = Omit<JobPageAnswer, "jobs"> & { jobs: Job[] };
/** A run as POST /v1/cron-jobs/:id/trigger answers it, or as the run lists do (with its job's name). */
export type Run = RunAnswer & Partial<Pick<ListedRun, "jobName" | "revision">>;
/** A session as GET /v1/sessions lists it, with its counts. */
export type Session = ListedSession;
export type Decisions = DecisionPage;
export type Doctor = DoctorReport;

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

async function call<T>(
  method: "GET" | "POST" | "PATCH" | "DELETE",
  path: string,
  query: Query,
  body?: unknown,
): Promise<T> {
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
  patch: <T>(path: string, body: unknown) => call<T>("PATCH", path, {}, body),
  delete: (path: string, query: Query = {}) => call<undefined>("DELETE", path, query),
};
