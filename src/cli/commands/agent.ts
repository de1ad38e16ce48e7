import { Option, type Command } from "commander";
import { EXECUTOR_KINDS } from "../../executors/agent-config.ts";
import { UsageError, type CliContext } from "../context.ts";
import { table } from "../format.ts";

/** `missiond agent …`: agents and how their missions are delivered. */
export function registerAgent(program: Command, ctx: CliContext): void {
  const agent = program.command("agent").description("agents and how their missions are delivered");
  list(agent, ctx);
  set(agent, ctx);
  remove(agent, ctx);
}

function list(agent: Command, ctx: CliContext): void {
  agent
    .command("ls")
    .description("agents from the config file and those set over the API")
    .action(async () => {
      const { agents } = await ctx.client().get<{
        agents: { id: string; source: string; executor: string; settings: Record<string, unknown> }[];
      }>("/v1/agents");
      ctx.print(agents, () =>
        table(
          ["ID", "SOURCE", "EXECUTOR", "SETTINGS"],
          agents.map((a) => [a.id, a.source, a.executor, JSON.stringify(a.settings)]),
        ),
      );
    });
}

interface SetOptions {
  executor: string;
  url?: string;
  secret?: string;
  timeout?: string;
  argv?: string[];
  provider?: string;
  model?: string;
  system?: string;
}

function set(agent: Command, ctx: CliContext): void {
  agent
    .command("set")
    .description("set (or replace) an agent's executor")
    .argument("<id>", "the agent's id, as sessions and cron jobs name it")
    // An option's values end at the first word starting with "-", so a program's own flags cannot
    // follow --argv; after "--" every word is the program's.
    .argument("[program...]", "command: the program and its arguments, after -- (they may then start with -)")
    .addOption(new Option("--executor <kind>", "how missions reach it").choices(EXECUTOR_KINDS).makeOptionMandatory())
    .option("--url <url>", "webhook: where to POST missions")
    .option("--secret <secret>", "webhook: HMAC key for the signature header")
    .option("--timeout <duration>", "webhook, command or llm: time limit per mission")
    .option("--argv <args...>", "command: the program and its arguments (none starting with -; else use --)")
    .option("--provider <name>", "llm: a provider under [llm.providers] (default: the default provider)")
    .option("--model <model>", "llm: the model (default: the provider's)")
    .option("--system <text>", "llm: the system prompt")
    .action(async (id: string, program: string[], opts: SetOptions) => {
      if (program.length > 0 && opts.argv) throw new UsageError("give the program after -- or with --argv, not both");
      const argv = program.length > 0 ? program : opts.argv;
      // Only the options given: the daemon validates the settings for the chosen executor.
      const body = Object.fromEntries(
        Object.entries({
          executor: opts.executor,
          url: opts.url,
          secret: opts.secret,
          timeout: opts.timeout,
          argv,
          provider: opts.provider,
          model: opts.model,
          system: opts.system,
        }).filter(([, v]) => v !== undefined),
      );
      const saved = await ctx
        .client()
        .put<{ id: string; executor: string }>(`/v1/agents/${encodeURIComponent(id)}`, body);
      ctx.print(saved, () => `agent ${saved.id}: ${saved.executor}`);
    });
}

function remove(agent: Command, ctx: CliContext): void {
  agent
    .command("rm <id>")
    .description("remove an agent set over the API (its missions then go to the log)")
    .action(async (id: string) => {
      await ctx.client().delete(`/v1/agents/${encodeURIComponent(id)}`);
      ctx.print({ removed: id }, () => `removed agent ${id}`);
    });
}
