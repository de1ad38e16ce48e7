import { Option, type Command } from "commander";
import type { LogFormat } from "../../log.ts";
import type { CliContext } from "../context.ts";

// Both load ../serve.ts on demand: the daemon's dependencies (database drivers, pg-boss) would
// slow every other command down.

/** `missiond serve`: the daemon itself. */
export function registerServe(program: Command, ctx: CliContext): void {
  program
    .command("serve")
    .description("run the daemon (embedded database in ./.missiond unless DATABASE_URL is set)")
    .addOption(logFormat())
    .action(async (opts: { logFormat?: LogFormat }) =>
      ctx.setExit(await (await import("../serve.ts")).serve(ctx.config(), ctx.io, opts.logFormat)),
    );
}

/** `missiond migrate`: the database schema, without the daemon. */
export function registerMigrate(program: Command, ctx: CliContext): void {
  program
    .command("migrate")
    .description("apply database migrations and exit (talks to the database directly)")
    .addOption(logFormat())
    .action(async (opts: { logFormat?: LogFormat }) =>
      ctx.setExit(await (await import("../serve.ts")).migrateOnly(ctx.config(), ctx.io, opts.logFormat)),
    );
}

function logFormat(): Option {
  return new Option(
    "--log-format <format>",
    "log lines as JSON or for people (default: pretty at a terminal, else json)",
  ).choices(["json", "pretty"] satisfies LogFormat[]);
}
