import { parse as parseToml, TomlDate, TomlError } from "smol-toml";
import { MissiondError } from "../errors.ts";
import { checkSpec, FILE_KEYS, unknownKey, type Definition, type JobSpec, type Problem } from "./spec.ts";

/**
 * Jobs files: TOML with one table per job, `[jobs.<name>]`, keyed as `cron add`'s flags. Pure:
 * takes the text, reads no file, so the daemon (at start and on reload) and the CLI (before it
 * sends anything) check a file with the same code and word its errors alike.
 */

export interface FileJob {
  name: string;
  /** 1-based line of its `[jobs.<name>]` header, when found. */
  line: number | null;
  spec: JobSpec;
  definition: Definition;
}

export interface JobsFile {
  /** Absolute path: what `managed_by` records. */
  path: string;
  jobs: FileJob[];
}

/** Every problem of every file, one per line; nothing is applied when there is one. */
export class JobsFileError extends MissiondError {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super("BAD_REQUEST", `invalid jobs file:\n  ${problems.join("\n  ")}`);
    this.problems = problems;
  }
}

/** Parses and checks the files together (names must be unique across them); throws JobsFileError. */
export function parseJobsFiles(files: readonly { path: string; text: string }[]): JobsFile[] {
  const problems: string[] = [];
  const parsed = files.map((file) => readJobsFile(file.path, file.text, problems));
  return unique(parsed, problems);
}

/**
 * Checks jobs already read from their files (the apply API's body: the CLI parsed the TOML); the
 * same checks and wording as parseJobsFiles, without line numbers.
 */
export function checkJobsFiles(
  files: readonly { path: string; jobs: readonly Record<string, unknown>[] }[],
): JobsFile[] {
  const problems: string[] = [];
  const checked = files.map(({ path, jobs }) => ({
    path,
    jobs: jobs.flatMap((raw): FileJob[] => {
      const checked = checkSpec(raw);
      if (!("problems" in checked)) return [{ name: checked.spec.name, line: null, ...checked }];
      const name = typeof raw.name === "string" ? `job "${raw.name}"` : "a job without a name";
      for (const p of checked.problems)
        problems.push(`${path}: ${name}: ${p.key && !p.namesKey ? `${p.key}: ` : ""}${p.message}`);
      return [];
    }),
  }));
  return unique(checked, problems);
}

function unique(files: JobsFile[], problems: string[]): JobsFile[] {
  const seen = new Map<string, string>();
  const paths = new Set<string>();
  for (const file of files) {
    if (paths.has(file.path)) problems.push(`${file.path}: given twice`);
    paths.add(file.path);
    for (const job of file.jobs) {
      const where = at(file.path, job.line);
      const first = seen.get(job.name);
      if (first) problems.push(`${where}: job "${job.name}" is also defined in ${first}`);
      else seen.set(job.name, where);
    }
  }
  if (problems.length > 0) throw new JobsFileError(problems);
  return files;
}

const at = (path: string, line: number | null | undefined) => (line ? `${path}:${line}` : path);

function readJobsFile(path: string, text: string, problems: string[]): JobsFile {
  let document: Record<string, unknown>;
  try {
    document = parseToml(text) as Record<string, unknown>;
  } catch (err) {
    if (!(err instanceof TomlError)) throw err;
    // smol-toml's message goes on with a quote of the lines; the position says the same.
    const message = err.message.split("\n")[0]!.replace(/^Invalid TOML document: /, "");
    problems.push(`${path}:${err.line}:${err.column}: not valid TOML: ${message}`);
    return { path, jobs: [] };
  }
  const lines = locate(text);
  for (const key of Object.keys(document)) {
    if (key !== "jobs")
      problems.push(`${path}: unknown top-level key "${key}" (a jobs file holds [jobs.<name>] tables)`);
  }
  const tables = document.jobs ?? {};
  if (!isTable(tables)) {
    problems.push(`${path}: "jobs" must be a table of jobs, [jobs.<name>]`);
    return { path, jobs: [] };
  }
  const jobs: FileJob[] = [];
  for (const [name, table] of Object.entries(tables)) {
    const where = lines.get(name);
    const fail = (problem: Problem) => {
      const key = problem.key;
      const line = (key && (where?.keys.get(key) ?? where?.keys.get(key.replace(/_/g, "-")))) || where?.line;
      problems.push(
        `${at(path, line)}: job "${name}": ${problem.key && !problem.namesKey ? `${problem.key}: ` : ""}${problem.message}`,
      );
    };
    if (!isTable(table)) {
      fail({ key: null, message: "must be a table, [jobs.<name>] with agent, prompt and cron or every" });
      continue;
    }
    const raw = normalizeKeys(table, fail);
    const checked = checkSpec({ ...raw, name });
    if ("problems" in checked) checked.problems.forEach(fail);
    else jobs.push({ name, line: where?.line ?? null, ...checked });
  }
  return { path, jobs };
}

const isTable = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date);

/**
 * Keys as the flags spell them (`max-runs`) become snake_case; TOML dates become ISO strings.
 * Unknown keys are reported here, with the key's own line, and left out of what is checked next.
 */
function normalizeKeys(table: Record<string, unknown>, fail: (problem: Problem) => void): Record<string, unknown> {
  const raw: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(table)) {
    const snake = key.replace(/-/g, "_");
    if (!(snake in FILE_KEYS) || snake === "name") {
      fail({ key, message: unknownKey(key), namesKey: true });
      continue;
    }
    if (snake in raw) {
      fail({ key, message: `given twice (as "${snake}" and "${snake.replace(/_/g, "-")}")` });
      continue;
    }
    raw[snake] = value instanceof TomlDate ? value.toISOString() : value;
  }
  return raw;
}

/**
 * Lines of each `[jobs.<name>]` header and of the keys under it, for messages. Best effort: a job
 * written as dotted keys or inline tables is found by name only, or not at all.
 */
function locate(text: string): Map<string, { line: number; keys: Map<string, number> }> {
  const found = new Map<string, { line: number; keys: Map<string, number> }>();
  let current: { line: number; keys: Map<string, number> } | null = null;
  text.split(/\r?\n/).forEach((content, index) => {
    const header = /^\s*\[([^[\]]*)\]\s*(#.*)?$/.exec(content);
    if (header) {
      const name = /^\s*jobs\s*\.\s*("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)\s*$/.exec(header[1]!)?.[1];
      current = name ? { line: index + 1, keys: new Map() } : null;
      if (name && current) found.set(unquote(name), current);
      return;
    }
    const key = /^\s*(?:"([^"]+)"|([A-Za-z0-9_-]+))\s*=/.exec(content);
    if (key && current && !current.keys.has(key[1] ?? key[2]!)) current.keys.set(key[1] ?? key[2]!, index + 1);
  });
  return found;
}

function unquote(name: string): string {
  if (name.startsWith("'")) return name.slice(1, -1);
  if (name.startsWith('"')) return JSON.parse(name) as string;
  return name;
}
