import { z } from "zod";
import { formatDuration, parseDuration } from "../duration.ts";
import { parseActiveHours } from "../cron/active-hours.ts";
import { addJobInput } from "../cron/input.ts";
import { assertCron, assertTimezone, parseEvery } from "../cron/schedule.ts";
import type { JobView } from "../cron/views.ts";
import { CATCHUP_POLICIES, JOB_KINDS, OVERLAP_POLICIES } from "../db/schema/enums.ts";
import { isMissiondError } from "../errors.ts";

/**
 * One job of a jobs file, keyed as `missiond cron add` spells its flags (snake_case; `--tz` is
 * `tz`, `--session` is `session`). The file key → API field mapping lives here and nowhere else.
 */
export const FILE_KEYS = {
  agent: "agentId",
  prompt: "prompt",
  cron: "cron",
  every: "every",
  tz: "timezone",
  kind: "kind",
  overlap: "overlapPolicy",
  catchup: "catchupPolicy",
  catchup_max: "catchupMax",
  session: "sessionId",
  active_hours: "activeHours",
  skip_if_busy: "skipIfBusy",
  jitter: "jitter",
  starts_at: "startsAt",
  ends_at: "endsAt",
  max_runs: "maxRuns",
  paused: "paused",
} as const;

export type FileKey = keyof typeof FILE_KEYS;
const API_TO_FILE = new Map<string, string>(Object.entries(FILE_KEYS).map(([file, api]) => [api, file]));

/** A job as a file (or the apply API) gives it: its name and the keys above. */
export const jobSpec = z
  .object({
    name: z.string(),
    agent: z.string(),
    prompt: z.string(),
    cron: z.string().optional(),
    every: z.string().optional(),
    tz: z.string().optional(),
    kind: z.enum(JOB_KINDS).optional(),
    overlap: z.enum(OVERLAP_POLICIES).optional(),
    catchup: z.enum(CATCHUP_POLICIES).optional(),
    catchup_max: z.number().int().optional(),
    session: z.string().optional(),
    active_hours: z.string().optional(),
    skip_if_busy: z.boolean().optional(),
    jitter: z.string().optional(),
    starts_at: z.string().optional(),
    ends_at: z.string().optional(),
    max_runs: z.number().int().optional(),
    paused: z.boolean().optional(),
  })
  .strict();

export type JobSpec = z.infer<typeof jobSpec>;

/**
 * What a file decides about a job, normalized so that two spellings of one schedule compare equal
 * ("90m" and "1h30m", instants in any offset). Every key but `paused` is managed: a key left out
 * of the file means its default. `paused` is managed only when the file sets it, so that pausing a
 * managed job for maintenance survives the next apply (and the daemon's restart).
 */
export interface Definition {
  agent: string;
  prompt: string;
  cron: string | null;
  every: string | null;
  tz: string;
  kind: string;
  overlap: string;
  catchup: string;
  catchup_max: number;
  session: string | null;
  active_hours: string | null;
  skip_if_busy: boolean;
  jitter: string | null;
  starts_at: string | null;
  ends_at: string | null;
  max_runs: number | null;
  paused?: boolean;
}

export const DEFINITION_FIELDS = Object.keys(FILE_KEYS) as FileKey[];

/** A spec as `cron add`'s input (camelCase API fields), for the daemon's own validation. */
export function toAddInput(spec: JobSpec): Record<string, unknown> {
  const input: Record<string, unknown> = { name: spec.name };
  for (const [key, value] of Object.entries(spec)) {
    if (key === "name" || value === undefined) continue;
    input[FILE_KEYS[key as FileKey]] = value;
  }
  if (spec.session !== undefined) input.sessionMode = "fixed";
  return input;
}

/** A problem with one job: the key it concerns (file spelling) when there is one. */
export interface Problem {
  key: string | null;
  message: string;
  /** The message names the key itself (an unknown key): not prefixed with it again. */
  namesKey?: true;
}

/** Checks a spec as `cron add` would; resolves to its definition or to the problems, in file keys. */
export function checkSpec(raw: unknown): { definition: Definition; spec: JobSpec } | { problems: Problem[] } {
  const shape = jobSpec.safeParse(raw);
  if (!shape.success) return { problems: shape.error.issues.flatMap(describe) };
  const spec = shape.data;
  const input = addJobInput.safeParse(toAddInput(spec));
  if (!input.success) return { problems: input.error.issues.flatMap(describe) };
  const value = input.data;
  try {
    assertTimezone(value.timezone);
    if (value.cron !== undefined) assertCron(value.cron, value.timezone);
    else parseEvery(value.every!);
  } catch (err) {
    if (!isMissiondError(err)) throw err;
    const key = err.code === "INVALID_TIMEZONE" ? "tz" : value.cron !== undefined ? "cron" : "every";
    return { problems: [{ key, message: err.message }] };
  }
  const jitterMs = value.jitter ? parseDuration(value.jitter)! : 0;
  const definition: Definition = {
    agent: value.agentId,
    prompt: value.prompt,
    cron: value.cron ?? null,
    every: value.every !== undefined ? formatDuration(parseEvery(value.every)) : null,
    tz: value.timezone,
    kind: value.kind,
    overlap: value.overlapPolicy,
    catchup: value.catchupPolicy,
    catchup_max: value.catchupMax,
    session: value.sessionId ?? null,
    active_hours: value.activeHours ? parseActiveHours(value.activeHours)!.join("-") : null,
    skip_if_busy: value.skipIfBusy,
    jitter: jitterMs > 0 ? formatDuration(jitterMs) : null,
    starts_at: value.startsAt ? new Date(value.startsAt).toISOString() : null,
    ends_at: value.endsAt ? new Date(value.endsAt).toISOString() : null,
    max_runs: value.maxRuns ?? null,
    ...(spec.paused !== undefined ? { paused: spec.paused } : {}),
  };
  return { definition, spec };
}

function describe(issue: z.core.$ZodIssue): Problem[] {
  if (issue.code === "unrecognized_keys")
    return issue.keys.map((key) => ({ key, message: unknownKey(key), namesKey: true as const }));
  const key = issue.path.map((p) => API_TO_FILE.get(String(p)) ?? String(p)).join(".") || null;
  // zod says "expected string, received undefined"; in a file that is a key left out.
  if (issue.code === "invalid_type" && /received undefined$/.test(issue.message))
    return [{ key, message: "missing (every job needs agent, prompt, and cron or every)" }];
  return [{ key, message: issue.message.replace("startsAt", "starts_at") }];
}

/** The problem for a key no job takes, with the nearest known key when one is close. */
export function unknownKey(key: string): string {
  const near = closest(key, [...DEFINITION_FIELDS]);
  return `unknown key "${key}"${near ? ` (did you mean "${near}"?)` : ""}`;
}

// What people coming from the API or from cron ls --json would write.
const ALIASES: Record<string, FileKey> = {
  agent_id: "agent",
  timezone: "tz",
  session_id: "session",
  overlap_policy: "overlap",
  catchup_policy: "catchup",
  schedule: "cron",
};

function closest(key: string, known: readonly string[]): string | null {
  const normalized = key.toLowerCase().replace(/-/g, "_");
  if (ALIASES[normalized]) return ALIASES[normalized];
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = distance(normalized, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= Math.max(1, Math.floor(key.length / 3)) ? best : null;
}

/** Edit distance counting a swap of neighbours as one edit ("agnet" is one from "agent"); keys are short. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** A stored job's definition (as the API shows it), in the same normalized form as a file's. */
export function definitionOf(job: JobView): Definition {
  return {
    agent: job.agentId,
    prompt: job.prompt,
    cron: job.cron,
    every: job.every,
    tz: job.timezone,
    kind: job.kind,
    overlap: job.overlapPolicy,
    catchup: job.catchupPolicy,
    catchup_max: job.catchupMax,
    session: job.sessionMode === "fixed" ? job.sessionId : null,
    active_hours: job.activeHours,
    skip_if_busy: job.skipIfBusy,
    jitter: job.jitter,
    starts_at: job.startsAt,
    ends_at: job.endsAt,
    max_runs: job.maxRuns,
    paused: job.paused,
  };
}

export interface FieldChange {
  field: FileKey;
  before: unknown;
  after: unknown;
}

/** The fields `desired` sets differently from `current` (`paused` only when `desired` has it). */
export function diffDefinitions(current: Definition, desired: Definition): FieldChange[] {
  const changes: FieldChange[] = [];
  for (const field of DEFINITION_FIELDS) {
    if (field === "paused" && desired.paused === undefined) continue;
    if (current[field] !== desired[field]) changes.push({ field, before: current[field], after: desired[field] });
  }
  return changes;
}
