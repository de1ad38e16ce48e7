import { Command, Option } from "commander";
import { EXECUTOR_KINDS } from "../../executors/agent-config.ts";
import { httpUrl, UsageError, type CliContext } from "../context.ts";
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
  webhookUrl?: string;
  secret?: string;
  timeout?: string;
  argv?: boolean;
  provider?: string;
  model?: string;
  system?: string;
  budget?: string;
}

/**
 * `agent set`, whose `--argv` ends its options: every word after it is the agent's program and its
 * arguments, flags included (`--argv /usr/local/bin/run-agent --once`), as after `--`.
 */
class AgentSetCommand extends Command {
  override parseOptions(args: string[]): ReturnType<Command["parseOptions"]> {
    const end = args.indexOf("--");
    const at = args.findIndex((arg, i) => arg === "--argv" && (end < 0 || i < end));
    if (at < 0) return super.parseOptions(args);
    const parsed = super.parseOptions([...args.slice(0, at), "--argv"]);
    return { ...parsed, operands: [...parsed.operands, ...args.slice(at + 1)] };
  }
}

function set(agent: Command, ctx: CliContext): void {
  const command = new AgentSetCommand("set");
  // A command made here rather than by agent.command() takes the parent's settings itself.
  command
    .copyInheritedSettings(agent)
    .description("set (or replace) an agent's executor")
    .argument("<id>", "the agent's id, as sessions and cron jobs name it")
    .argument("[program...]", "command: the program and its arguments, after --argv or -- (they may start with -)")
    .addOption(new Option("--executor <kind>", "how missions reach it").choices(EXECUTOR_KINDS).makeOptionMandatory())
    .addOption(new Option("--webhook-url <url>", "webhook: where to POST missions").argParser(httpUrl))
    .option("--secret <secret>", "webhook: HMAC key for the signature header")
    .option("--timeout <duration>", "webhook, command or llm: time limit per mission")
    .option("--argv", "command: every word after it is the program and its arguments (as after --)")
    .option("--provider <name>", "llm: a provider under [llm.providers] (default: the default provider)")
    .option("--model <model>", "llm: the model (default: the provider's)")
    .option("--system <text>", "llm: the system prompt")
    .option("--budget <limits>", 'skip its slots over these limits, over all its jobs, e.g. "$5/day, 10 runs/hour"')
    .action(async (id: string, program: string[], opts: SetOptions, self: Command) => {
      if (opts.executor === "webhook" && !opts.webhookUrl) {
        // `--url` after `set` is the daemon's address (a global option); said once, not guessed.
        const daemonUrl: unknown = self.getOptionValue("url");
        throw new UsageError(
          `--webhook-url is required for the webhook executor${daemonUrl ? ` (--url is the daemon's address; the webhook's is --webhook-url)` : ""}`,
        );
      }
      if (opts.executor === "command" && program.length === 0)
        throw new UsageError("the command executor needs its program: give it after --argv (or after --)");
      // Only the options given: the daemon validates the settings for the chosen executor.
      const body = Object.fromEntries(
        Object.entries({
          executor: opts.executor,
          url: opts.webhookUrl,
          secret: opts.secret,
          timeout: opts.timeout,
          argv: program.length > 0 ? program : undefined,
          provider: opts.provider,
          model: opts.model,
          system: opts.system,
          budget: opts.budget,
        }).filter(([, v]) => v !== undefined),
      );
      const saved = await ctx
        .client()
        .put<{ id: string; executor: string }>(`/v1/agents/${encodeURIComponent(id)}`, body);
      ctx.print(saved, () => `agent ${saved.id}: ${saved.executor}`);
    });
  agent.addCommand(command);
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
