import { DEFINITION_FIELDS, type Definition, type FileKey } from "./spec.ts";

/**
 * A jobs file for the given jobs, in the format apply reads: applying it to the daemon it came
 * from changes nothing. Keys at their default are left out (tz "UTC", overlap "skip" …) and so is
 * `paused` unless set, which keeps a paused job's state in the daemon's hands (see spec.ts).
 */
export function toToml(jobs: readonly { name: string; definition: Definition }[]): string {
  return jobs.map(({ name, definition }) => tableOf(name, definition)).join("\n");
}

const DEFAULTS: Partial<Record<FileKey, unknown>> = {
  tz: "UTC",
  kind: "cron_job",
  overlap: "skip",
  catchup: "latest",
  catchup_max: 10,
  skip_if_busy: false,
  paused: false,
};

function tableOf(name: string, definition: Definition): string {
  const lines = [`[jobs.${key(name)}]`];
  for (const field of DEFINITION_FIELDS) {
    const value = definition[field];
    if (value === null || value === undefined || DEFAULTS[field] === value) continue;
    lines.push(`${field} = ${literal(field, value)}`);
  }
  return `${lines.join("\n")}\n`;
}

const key = (name: string) => (/^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name));

function literal(field: FileKey, value: string | number | boolean): string {
  // Instants as TOML offset date-times, which read back as the same instant.
  if (field === "starts_at" || field === "ends_at") return String(value);
  // JSON's string escapes (\n, \", \uXXXX) are all valid in a TOML basic string.
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}
