import { z } from "zod";
import { fileKeyOf, jobFieldList } from "../cron/fields.ts";
import type { JobView } from "../cron/views.ts";
import { MissiondError } from "../errors.ts";
import { DEFINITION_FIELDS, definitionOf, type Definition, type FileKey } from "./spec.ts";

/**
 * What GET /v1/jobs-file and `cron export` give: the jobs (those named in `names`, if given) as a
 * jobs file, and their definitions. A name that matches no job is an error naming it.
 */
export function exportJobs(
  jobs: readonly JobView[],
  names?: readonly string[],
): { toml: string; jobs: number; definitions: { name: string; definition: Definition }[] } {
  const wanted = names && names.length > 0 ? new Set(names) : null;
  if (wanted) {
    const missing = [...wanted].filter((name) => !jobs.some((job) => job.name === name));
    if (missing.length > 0)
      throw new MissiondError("NOT_FOUND", `no cron job named ${missing.map((n) => `"${n}"`).join(", ")}`);
  }
  const definitions = jobs
    .filter((job) => !wanted || wanted.has(job.name))
    .map((job) => ({ name: job.name, definition: definitionOf(job) }));
  return { toml: toToml(definitions), jobs: definitions.length, definitions };
}

/**
 * A jobs file for the given jobs, in the format apply reads: applying it to the daemon it came
 * from changes nothing. Keys at their default are left out (tz "UTC", overlap "skip" …) and so is
 * `paused` unless set, which keeps a paused job's state in the daemon's hands (see spec.ts).
 */
export function toToml(jobs: readonly { name: string; definition: Definition }[]): string {
  return jobs.map(({ name, definition }) => tableOf(name, definition)).join("\n");
}

// Each key's default as a definition spells it (`cron add`'s defaults, `paused` false).
const DEFAULTS = new Map<FileKey, unknown>(
  jobFieldList.flatMap((field) => {
    const key = fileKeyOf(field);
    return key && field.default !== undefined
      ? [[key, field.normalize?.(field.default as never) ?? field.default]]
      : [];
  }),
);

// Instants are written as TOML offset date-times, which read back as the same instant.
const INSTANTS = new Set(
  jobFieldList.filter((field) => field.input instanceof z.ZodISODateTime).map((field) => fileKeyOf(field)),
);

function tableOf(name: string, definition: Definition): string {
  const lines = [`[jobs.${key(name)}]`];
  for (const field of DEFINITION_FIELDS) {
    const value = definition[field];
    if (value === null || value === undefined || DEFAULTS.get(field) === value) continue;
    lines.push(`${field} = ${literal(field, value)}`);
  }
  return `${lines.join("\n")}\n`;
}

const key = (name: string) => (/^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name));

function literal(field: FileKey, value: NonNullable<Definition[string]>): string {
  if (INSTANTS.has(field)) return String(value);
  // A map (labels) as an inline table; its keys are bare (label keys are [a-z0-9_.-]) or quoted.
  if (typeof value === "object")
    return `{ ${Object.entries(value)
      .map(([k, v]) => `${key(k)} = ${JSON.stringify(v)}`)
      .join(", ")} }`;
  // JSON's string escapes (\n, \", \uXXXX) are all valid in a TOML basic string.
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}
