import { readFile } from "node:fs/promises";
import { isAbsolute } from "node:path";
import { z } from "zod";
import type { Logger } from "../log.ts";
import { validate } from "../validation.ts";
import { checkJobsFiles, JobsFileError, parseJobsFiles, type JobsFile } from "./parse.ts";
import { liveJobFiles } from "./queries.ts";
import { applyJobsFilesToDb, type ApplyResult, type JobsApplyDeps } from "./service.ts";

/** POST /v1/apply: jobs files the caller read (the CLI parses the TOML, so errors point at lines). */
export const applyInput = z
  .object({
    files: z
      .array(
        z
          .object({
            path: z.string().min(1).max(4096).refine(isAbsolute, "must be an absolute path"),
            /** Each job as the file spells it, with its `name`. */
            jobs: z.array(z.record(z.string(), z.unknown())).max(10_000),
          })
          .strict(),
      )
      .min(1)
      .max(100),
    prune: z.boolean().default(false),
    dryRun: z.boolean().default(false),
    force: z.boolean().default(false),
  })
  .strict();

/** Reads and checks jobs files from disk; a missing or unreadable file is a problem like any other. */
export async function readJobsFiles(paths: readonly string[]): Promise<JobsFile[]> {
  const problems: string[] = [];
  const texts: { path: string; text: string }[] = [];
  for (const path of paths) {
    try {
      texts.push({ path, text: await readFile(path, "utf8") });
    } catch (err) {
      problems.push(`${path}: cannot read: ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) throw new JobsFileError(problems);
  return parseJobsFiles(texts);
}

/**
 * Applies the configured `jobs_files` (daemon start, reload): the files are the truth, so jobs
 * they no longer declare are deleted (prune); jobs managed by a file no longer listed are left
 * alone. Throws JobsFileError (nothing applied) when a file is invalid.
 */
export async function applyJobsFiles(
  deps: JobsApplyDeps,
  paths: readonly string[],
  options: { dryRun?: boolean } = {},
): Promise<ApplyResult> {
  const files = await readJobsFiles(paths);
  return applyJobsFilesToDb(deps, files, { prune: true, dryRun: options.dryRun ?? false, force: false });
}

export interface JobsFilesState {
  /** The configured files. */
  files: readonly string[];
  /** When they were last applied (or the attempt failed). */
  at: string | null;
  /** Why the last attempt applied nothing; null after a success. */
  error: string | null;
}

/** The jobs files of the daemon: the apply API, and the configured files at start and on reload. */
export class JobsFilesService {
  private readonly deps: JobsApplyDeps & { log: Logger };
  private current: JobsFilesState;

  constructor(deps: JobsApplyDeps & { log: Logger; files: readonly string[] }) {
    this.deps = deps;
    this.current = { files: deps.files, at: null, error: null };
  }

  /** POST /v1/apply. */
  async apply(raw: unknown): Promise<ApplyResult> {
    const input = validate(applyInput, raw);
    const files = checkJobsFiles(input.files);
    return applyJobsFilesToDb(this.deps, files, input);
  }

  /** For `missiond doctor`: the configured files and the outcome of their last apply. */
  state(): JobsFilesState {
    return this.current;
  }

  /**
   * Applies the configured files (the daemon calls it at start; a reload calls it with the new
   * list). An invalid file is logged and kept for doctor, and the jobs stay as they are: a bad
   * edit followed by a restart must not become an outage. Resolves to the result, or null.
   */
  async applyConfigured(files: readonly string[] = this.current.files): Promise<ApplyResult | null> {
    const log = this.deps.log.child({ component: "jobs-files" });
    const at = new Date(this.deps.clock.now()).toISOString();
    if (files.length === 0) {
      this.current = { files, at: null, error: null };
      return null;
    }
    try {
      const result = await applyJobsFiles(this.deps, files);
      this.current = { files, at, error: null };
      log.info(
        { files, counts: result.plan.counts, plan: result.text },
        result.applied ? "jobs files applied" : "jobs files: no changes",
      );
      await this.reportUnlisted(files, log);
      return result;
    } catch (err) {
      const error = err instanceof JobsFileError ? err.message : `cannot apply jobs files: ${(err as Error).message}`;
      this.current = { files, at, error };
      log.error({ err, files }, `${error} (jobs left as they were)`);
      return null;
    }
  }

  /** Jobs of files no longer in the configuration are left alone; say so, once per apply. */
  private async reportUnlisted(files: readonly string[], log: Logger): Promise<void> {
    const managed = await liveJobFiles(this.deps.db);
    const listed = new Set(files);
    const unlisted = managed.filter((job) => job.managedBy !== null && !listed.has(job.managedBy));
    if (unlisted.length > 0)
      log.warn(
        { jobs: unlisted.map((job) => ({ name: job.name, file: job.managedBy })) },
        "jobs managed by files no longer in jobs_files are left as they are",
      );
  }
}
