import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { JobsFileError, parseJobsFiles } from "../../jobs-files/parse.ts";
import type { ApplyResult } from "../../jobs-files/service.ts";
import type { CliContext } from "../context.ts";

/**
 * `missiond apply FILE…`: jobs files as the truth for the jobs they declare. The TOML is read and
 * checked here, so a mistake is reported with its file and line before anything is sent.
 */
export function registerApply(program: Command, ctx: CliContext): void {
  program
    .command("apply <files...>")
    .description(
      "create, update (and with --prune delete) the jobs declared in jobs files, by name, in one transaction; prints the plan first",
    )
    .option("--dry-run", "print the plan, change nothing")
    .option("--prune", "delete jobs these files managed and no longer declare")
    .option("--force", "move jobs that another jobs file manages to these files")
    .action(async (paths: string[], opts: { dryRun?: boolean; prune?: boolean; force?: boolean }) => {
      const texts = paths.map((path) => {
        const absolute = resolve(ctx.io.cwd, path);
        try {
          return { path: absolute, text: readFileSync(absolute, "utf8") };
        } catch (err) {
          throw new JobsFileError([`${absolute}: cannot read: ${(err as Error).message}`]);
        }
      });
      const files = parseJobsFiles(texts);
      const result = await ctx.client().post<ApplyResult>("/v1/apply", {
        files: files.map((file) => ({ path: file.path, jobs: file.jobs.map((job) => job.spec) })),
        prune: Boolean(opts.prune),
        dryRun: Boolean(opts.dryRun),
        force: Boolean(opts.force),
      });
      ctx.print(result, () => result.text);
    });
}

/** `missiond cron export`: the jobs as a jobs file, which `missiond apply` reads back as no changes. */
export function registerExport(cron: Command, ctx: CliContext): void {
  cron
    .command("export")
    .description("print jobs as a jobs file (TOML) for missiond apply")
    .option("--name <names...>", "only these jobs (by name)")
    .action(async (opts: { name?: string[] }) => {
      const file = await ctx.client().get<{ toml: string; definitions: unknown[] }>("/v1/jobs-file", {
        name: opts.name,
      });
      if (ctx.globals().json) ctx.print(file.definitions, () => "");
      else ctx.io.stdout(file.toml);
    });
}
