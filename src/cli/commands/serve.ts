import type { Command } from "commander";
import type { CliContext } from "../context.ts";

// Both load ../serve.ts on demand: the daemon's dependencies (database drivers, pg-boss) would
// slow every other command down.

/** `missiond serve`: the daemon itself. */
export function registerServe(program: Command, ctx: CliContext): void {
  program
    .command("serve")
    .description("run the daemon (embedded database in ./.missiond unless DATABASE_URL is set)")
    .action(async () => ctx.setExit(await (await import("../serve.ts")).serve(ctx.config(), ctx.io)));
}

/** `missiond migrate`: the database schema, without the daemon. */
export function registerMigrate(program: Command, ctx: CliContext): void {
  program
    .command("migrate")
    .description("apply database migrations and exit (talks to the database directly)")
    .action(async () => ctx.setExit(await (await import("../serve.ts")).migrateOnly(ctx.config(), ctx.io)));
}
