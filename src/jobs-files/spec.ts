import { nearest } from "../did-you-mean.ts";
import { parseInput } from "../validation.ts";
import { z } from "zod";
import { addJobInput } from "../cron/input.ts";
import { fileKeyOf, jobFieldList, type JobFieldName } from "../cron/fields.ts";
import { assertCron, assertTimezone, parseEvery } from "../cron/schedule.ts";
import type { JobView } from "../cron/views.ts";
import { isMissiondError } from "../errors.ts";

/**
 * One job of a jobs file, keyed as `missiond cron add` spells its flags (snake_case; `--tz` is
 * `tz`, `--session` is `session`): every field of the job table (`cron/fields.ts`) with a flag,
 * except those it marks `noFile`. The name is the table's key.
 */
const FILE_FIELDS = jobFieldList.flatMap((field) => {
  const key = fileKeyOf(field);
  return key ? [{ key, field }] : [];
});

/** File key → API field. */
export const FILE_KEYS: Readonly<Record<string, JobFieldName>> = Object.fromEntries(
  FILE_FIELDS.map(({ key, field }) => [key, field.api]),
);

export type FileKey = string;
const API_TO_FILE = new Map<string, string>(FILE_FIELDS.map(({ key, field }) => [field.api, key]));

/** A job as a file (or the apply API) gives it: its name and the keys above. */
export const jobSpec = z
  .object({
    name: z.string(),
    ...Object.fromEntries(
      FILE_FIELDS.map(({ key, field }) => [key, field.required ? field.input : field.input.optional()]),
    ),
  })
  .strict();

export type JobSpec = { name: string } & Record<string, unknown>;

/** A key's value; a map (labels) has its keys sorted, so that equal maps spell alike. */
type Value = string | number | boolean | Readonly<Record<string, string>> | null;

/** Whether two values of a key are the same (maps compared by content). */
const sameValue = (a: Value | undefined, b: Value | undefined): boolean =>
  a === b || (typeof a === "object" && typeof b === "object" && JSON.stringify(a) === JSON.stringify(b));

/**
 * What a file decides about a job, normalized so that two spellings of one schedule compare equal
 * ("90m" and "1h30m", instants in any offset): each key in its view's spelling. Every key but
 * `paused` is managed: a key left out of the file means its default. `paused` is managed only
 * when the file sets it, so that pausing a managed job for maintenance survives the next apply
 * (and the daemon's restart).
 */
export type Definition = Record<string, Value | undefined> & { paused?: boolean };

/** A definition as answers show it (the apply plan). */
export const definitionSchema = z
  .object(
    Object.fromEntries(
      FILE_FIELDS.map(({ key, field }) => [key, key === "paused" ? field.view.optional() : field.view]),
    ),
  )
  .strict();

export const DEFINITION_FIELDS: readonly FileKey[] = FILE_FIELDS.map(({ key }) => key);

/** A spec as `cron add`'s input (camelCase API fields), for the daemon's own validation. */
export function toAddInput(spec: JobSpec): Record<string, unknown> {
  const input: Record<string, unknown> = { name: spec.name };
  for (const { key, field } of FILE_FIELDS) {
    const value = spec[key];
    if (value === undefined) continue;
    input[field.api] = value;
    Object.assign(input, field.implies?.(value as never));
  }
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
  const shape = parseInput(jobSpec, raw);
  if (!shape.success) return { problems: shape.error.issues.flatMap(describe) };
  const spec = shape.data as JobSpec;
  const input = parseInput(addJobInput, toAddInput(spec));
  if (!input.success) return { problems: input.error.issues.flatMap(describe) };
  const value = input.data;
  try {
    assertTimezone(value.timezone);
    if (value.cron !== undefined) assertCron(value.cron, value.timezone);
    else if (value.every !== undefined) parseEvery(value.every);
  } catch (err) {
    if (!isMissiondError(err)) throw err;
    const key = err.code === "INVALID_TIMEZONE" ? "tz" : value.cron !== undefined ? "cron" : "every";
    return { problems: [{ key, message: err.message }] };
  }
  const definition: Definition = {};
  for (const { key, field } of FILE_FIELDS) {
    const given = (value as Record<string, unknown>)[field.api];
    if (key === "paused" && spec.paused === undefined) continue;
    definition[key] = given === undefined ? null : ((field.normalize?.(given as never) ?? given) as Value);
  }
  return { definition, spec };
}

function describe(issue: z.core.$ZodIssue): Problem[] {
  if (issue.code === "unrecognized_keys")
    return issue.keys.map((key) => ({ key, message: unknownKey(key), namesKey: true as const }));
  const key = issue.path.map((p) => API_TO_FILE.get(String(p)) ?? String(p)).join(".") || null;
  // In a file, a value zod calls "required" is a key left out.
  if (issue.code === "invalid_type" && issue.message === "required")
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
  return ALIASES[key.toLowerCase().replace(/-/g, "_")] ?? nearest(key, known);
}

/** A stored job's definition (as the API shows it), in the same normalized form as a file's. */
export function definitionOf(job: JobView): Definition {
  const definition: Definition = {};
  for (const { key, field } of FILE_FIELDS) definition[key] = (job[field.api] ?? null) as Value;
  // A session id kept while the job runs fresh sessions is not the file's `session`.
  if (job.sessionMode !== "fixed") definition[API_TO_FILE.get("sessionId")!] = null;
  return definition;
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
    if (!sameValue(current[field], desired[field]))
      changes.push({ field, before: current[field], after: desired[field] });
  }
  return changes;
}
