import type { Command } from "commander";
import type { TokenView } from "../../cron/trigger-tokens.ts";
import type { CliContext } from "../context.ts";
import { table } from "../format.ts";

const tokensPath = (id: string, name?: string) =>
  `/v1/cron-jobs/${encodeURIComponent(id)}/tokens${name === undefined ? "" : `/${encodeURIComponent(name)}`}`;

/** `missiond cron token create|ls|rm`: the tokens that can trigger one job (event triggers). */
export function registerCronToken(cron: Command, ctx: CliContext): void {
  const token = cron
    .command("token")
    .description("trigger tokens: each fires one job (trigger event) and reads its runs");
  token
    .command("create <id>")
    .description("make a trigger token for the job (its value is shown this once)")
    .option("--name <name>", "what to call it (unique among the job's tokens)", "default")
    .action(async (id: string, opts: { name: string }) => {
      const made = await ctx.client().post<TokenView & { token: string }>(tokensPath(id), { name: opts.name });
      ctx.print(made, () =>
        [
          `token "${made.name}" for cron job ${id} (shown once; the daemon keeps only its hash):`,
          made.token,
          `call: curl -X POST -H "Authorization: Bearer $TOKEN" -H "content-type: application/json" -d '{}' <api>/v1/cron-jobs/${id}/trigger`,
        ].join("\n"),
      );
    });
  token
    .command("ls <id>")
    .description("the job's trigger tokens (never their values)")
    .action(async (id: string) => {
      const { tokens } = await ctx.client().get<{ tokens: TokenView[] }>(tokensPath(id));
      ctx.print(tokens, () =>
        table(
          ["NAME", "PREFIX", "CREATED", "BY", "LAST USED"],
          tokens.map((t) => [t.name, t.prefix, t.createdAt, t.createdBy, t.lastUsedAt ?? "never"]),
        ),
      );
    });
  token
    .command("rm <id> <name>")
    .description("revoke a trigger token: calls with it are refused from now on")
    .action(async (id: string, name: string) => {
      await ctx.client().delete(tokensPath(id, name));
      ctx.print({ revoked: name }, () => `revoked token "${name}" of cron job ${id}`);
    });
}
