import type { Command } from "commander";
import type { CliContext } from "../context.ts";

/** `missiond config check`: validates the configuration locally, no daemon needed. */
export function registerConfig(program: Command, ctx: CliContext): void {
  program
    .command("config")
    .description("the configuration (no daemon needed)")
    .command("check")
    .description(
      "validate the config file and environment overrides and print the effective configuration (secrets redacted); exit 1 naming the key when invalid",
    )
    .action(async () => {
      const { configCheck } = await import("../config-check.ts");
      ctx.setExit(configCheck(ctx.io, { configPath: ctx.globals().config, json: ctx.globals().json }));
    });
}
