import { existsSync, lstatSync, readdirSync, readFileSync } from "node:fs";
import { basename, isAbsolute, join, relative, resolve } from "node:path";
import { packagePath } from "../../paths.ts";
import { Option, type Command } from "commander";
import { MISSING_GRANT_POLICIES, type MissingGrantPolicy } from "../../plugins/grant-check.ts";
import { grantSummary } from "../../plugins/grants.ts";
import type { InstallAnswer, InstallBody } from "../../plugins/install.ts";
import { isPluginFolder } from "../../plugins/manifest.ts";
import { UsageError, type CliContext } from "../context.ts";

/** The package's example plugins (`plugins install cron-sentinel`). */
export const BUNDLED_PLUGINS = packagePath("plugins");

// Not part of a plugin: what a checkout or a package manager leaves beside it.
const SKIPPED = new Set([".git", "node_modules"]);

/**
 * `missiond plugins install PATH|NAME`. The CLI reads the folder where it runs and sends its files;
 * the daemon validates them and writes them to its own plugin directory. So the daemon needs no
 * access to the source (under systemd it sees neither /home nor the caller's /tmp), and the CLI
 * needs no write access to the daemon's directories (/var/lib/missiond is the service user's).
 */
export function registerInstall(plugins: Command, ctx: CliContext): void {
  plugins
    .command("install")
    .description(
      "validate a plugin folder (or a bundled example, by name) and install it into the daemon's plugin directory",
    )
    .argument("<source>", "a plugin folder, or the name of a bundled example (e.g. cron-sentinel)")
    .option("-y, --yes", "install without asking (required when not at a terminal)")
    .option("--force", "replace an installed plugin of the same name")
    .addOption(
      new Option(
        "--on-missing-grant <policy>",
        "code that uses a host member plugin.json does not grant: refuse it, or install it with a warning (default: the daemon's [plugins] on_missing_grant, refuse unless set)",
      ).choices(MISSING_GRANT_POLICIES),
    )
    .action(async (source: string, opts: { yes?: boolean; force?: boolean; onMissingGrant?: MissingGrantPolicy }) => {
      const dir = resolveSource(source, ctx.io.cwd);
      const upload = {
        folder: basename(dir),
        files: readFolder(dir),
        force: opts.force === true,
        ...(opts.onMissingGrant ? { onMissingGrant: opts.onMissingGrant } : {}),
      };
      const client = ctx.client();
      const preview = await client.post<InstallAnswer>("/v1/plugins/install", { ...upload, dryRun: true });
      if (!ctx.globals().json) ctx.io.stdout(`${describe(preview, dir)}\n`);
      if (preview.exists && !opts.force)
        throw new UsageError(
          `plugin ${preview.name} is already installed in ${preview.dir}; pass --force to replace it`,
        );
      if (!opts.yes) {
        if (!ctx.io.stdinIsTty || !ctx.io.confirm)
          throw new UsageError("not at a terminal to confirm: pass --yes to install with the grants shown above");
        if (!(await ctx.io.confirm(`Install ${preview.name} with these grants? [y/N] `))) {
          ctx.io.stderr("missiond: not installed\n");
          ctx.setExit(1);
          return;
        }
      }
      const answer = await client.post<InstallAnswer>("/v1/plugins/install", upload);
      ctx.print(
        answer,
        () =>
          `installed ${answer.name} ${answer.version} in ${answer.dir}${answer.exists ? " (replaced)" : ""}\n` +
          // The reload checks the code again, under the daemon's own setting.
          ((answer.warnings ?? []).length > 0
            ? 'its loads follow [plugins] on_missing_grant: set it to "warn" for the reload to load it\n'
            : "") +
          "run `missiond plugins reload` to load it",
      );
    });
}

function describe(preview: InstallAnswer, source: string): string {
  return [
    `plugin     ${preview.name} ${preview.version} (${preview.kind})${preview.description ? `: ${preview.description}` : ""}`,
    `from       ${source}`,
    `into       ${preview.dir}${preview.exists ? " (already installed)" : ""}`,
    `hooks      ${preview.hooks.join(", ") || "-"}`,
    `grants     ${grantSummary(preview.grants)}`,
    // Absent from a daemon older than the grant check.
    ...(preview.warnings ?? []).map((w) => `warning    ${w}`),
  ].join("\n");
}

/** A path when it names one (or an existing folder); otherwise a bundled example's name. */
function resolveSource(source: string, cwd: string): string {
  const path = resolve(cwd, source);
  const looksLikePath = source.includes("/") || source.startsWith(".") || isAbsolute(source);
  if (looksLikePath || existsSync(path)) {
    if (!existsSync(path)) throw new UsageError(`${path} does not exist`);
    if (!lstatSync(path).isDirectory()) throw new UsageError(`${path} is not a folder`);
    if (!isPluginFolder(path))
      throw new UsageError(`${path} is not a plugin folder: no plugin.json and no index.js/.mjs/.ts`);
    return path;
  }
  const bundled = join(BUNDLED_PLUGINS, source);
  if (/^[a-z0-9][a-z0-9._-]*$/.test(source) && isPluginFolder(bundled)) return bundled;
  const names = existsSync(BUNDLED_PLUGINS)
    ? readdirSync(BUNDLED_PLUGINS).filter((n) => isPluginFolder(join(BUNDLED_PLUGINS, n)))
    : [];
  throw new UsageError(
    `no folder ${path} and no bundled plugin named ${source} (bundled: ${names.join(", ") || "none"})`,
  );
}

/** Every regular file under `dir`, base64, with its executable bit (command hooks need it). */
function readFolder(dir: string): InstallBody["files"] {
  const files: InstallBody["files"] = [];
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder).sort()) {
      if (SKIPPED.has(entry)) continue;
      const path = join(folder, entry);
      const stat = lstatSync(path);
      if (stat.isSymbolicLink())
        throw new UsageError(`${path} is a symbolic link; install copies regular files only (copy what it points to)`);
      if (stat.isDirectory()) walk(path);
      else if (stat.isFile())
        files.push({
          path: relative(dir, path).split("\\").join("/"),
          content: readFileSync(path).toString("base64"),
          executable: (stat.mode & 0o111) !== 0,
        });
    }
  };
  walk(dir);
  return files;
}
