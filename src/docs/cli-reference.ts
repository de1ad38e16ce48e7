import { Help, type Command, type Option } from "commander";
import { EXAMPLES, commandPath } from "../cli/examples.ts";
import type { CliIo } from "../cli/io.ts";
import { commandTree } from "../cli/program.ts";
import { cell, slug } from "./markdown.ts";

/**
 * docs/cli.md: every command of the program as `--help` describes it (usage, description,
 * arguments, options with their defaults and choices, examples), rendered from the command
 * objects themselves so the page and `--help` cannot disagree.
 */

const silentIo: CliIo = {
  env: {},
  cwd: "/",
  hostname: "docs",
  probe: { pid: 0, isAlive: () => false },
  stdout: () => {},
  stderr: () => {},
  onSignal: () => {},
  forceExit: (code) => {
    throw new Error(`exit ${code}`);
  },
};

/** The program as runCli builds it. */
export const cliProgram = (): Command => commandTree(silentIo);

function optionRows(help: Help, options: readonly Option[]): string[] {
  return [
    "| Option | Description |",
    "| --- | --- |",
    ...options.map((o) => `| \`${cell(help.optionTerm(o))}\` | ${cell(help.optionDescription(o))} |`),
  ];
}

/** The commands under `command` that --help lists, without commander's implicit `help` command. */
const visibleSubcommands = (help: Help, command: Command) =>
  help.visibleCommands(command).filter((c) => command.commands.includes(c));

/** The section of one command: heading, description, usage, arguments, options, examples. */
function commandSection(command: Command, help: Help, depth: number): string[] {
  const path = commandPath(command);
  const title = path ? `missiond ${path}` : "missiond";
  const out = [`${"#".repeat(depth)} ${title}`, ""];
  const description = help.commandDescription(command);
  if (description) out.push(description, "");
  out.push("```text", `Usage: ${help.commandUsage(command)}`, "```", "");
  const args = help.visibleArguments(command);
  if (args.length) {
    out.push("| Argument | Description |", "| --- | --- |");
    for (const a of args) out.push(`| \`${cell(help.argumentTerm(a))}\` | ${cell(help.argumentDescription(a))} |`);
    out.push("");
  }
  // The help flag is on every command; the global options are listed once, for the program.
  const options = help.visibleOptions(command).filter((o) => o.long !== "--help");
  if (options.length) out.push(...optionRows(help, options), "");
  const subcommands = visibleSubcommands(help, command);
  if (subcommands.length) {
    out.push("| Command | Description |", "| --- | --- |");
    for (const sub of subcommands) {
      const subTitle = `missiond ${commandPath(sub)}`;
      out.push(`| [${subTitle}](#${slug(subTitle)}) | ${cell(help.subcommandDescription(sub))} |`);
    }
    out.push("");
  }
  const examples = EXAMPLES[path];
  if (examples?.length) out.push("Examples:", "", "```sh", ...examples, "```", "");
  return out;
}

/** The whole page. */
export async function cliReference(): Promise<string> {
  const program = cliProgram();
  const help = program.createHelp();
  const out = [
    "# CLI reference",
    "",
    "Every `missiond` command, with its options and examples. This page is generated from the commands",
    "themselves (`npm run docs`); `missiond <command> --help` prints the same. The global options below",
    "are accepted by every command, and `-h, --help` prints a command's help.",
    "",
  ];
  const visit = (command: Command, depth: number) => {
    out.push(...commandSection(command, help, Math.min(depth, 4)));
    for (const sub of visibleSubcommands(help, command)) visit(sub, depth + 1);
  };
  out.push(...commandSection(program, help, 2));
  for (const noun of visibleSubcommands(help, program)) visit(noun, 2);
  return `${out.join("\n").trimEnd()}\n`;
}
