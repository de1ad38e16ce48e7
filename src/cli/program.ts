import { Command } from "commander";
import { registerAgent } from "./commands/agent.ts";
import { registerAlerts } from "./commands/alerts.ts";
import { registerApply } from "./commands/apply.ts";
import { registerBackup } from "./commands/backup.ts";
import { registerConfig } from "./commands/config.ts";
import { registerCron } from "./commands/cron.ts";
import { registerDoctor } from "./commands/doctor.ts";
import { registerNotify } from "./commands/notify.ts";
import { registerPlugins } from "./commands/plugins.ts";
import { registerRuns } from "./commands/runs.ts";
import { registerMigrate, registerServe } from "./commands/serve.ts";
import { registerSession } from "./commands/session.ts";
import { registerTodo } from "./commands/todo.ts";
import { createContext, plainError, reportError, shareGlobalOptions, type CliContext } from "./context.ts";
import { addExamples, commandPath } from "./examples.ts";
import { EXIT, type CliIo } from "./io.ts";
import { VERSION } from "../version.ts";

/** The nouns under `missiond`, in the order `--help` lists them. */
const NOUNS: readonly ((program: Command, ctx: CliContext) => void)[] = [
  registerServe,
  registerMigrate,
  registerBackup,
  registerConfig,
  registerCron,
  registerApply,
  registerRuns,
  registerDoctor,
  registerAlerts,
  registerAgent,
  registerSession,
  registerNotify,
  registerTodo,
  registerPlugins,
];

/** Runs one CLI invocation; resolves to the process exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode: number = EXIT.OK;
  const program = buildProgram(io, (code) => (exitCode = code));
  try {
    await program.parseAsync([...argv], { from: "user" });
    return exitCode;
  } catch (err) {
    return reportError(err, io);
  }
}

/** The whole program, built as runCli builds it and not run (the CLI reference reads it). */
export const commandTree = (io: CliIo): Command => buildProgram(io, () => {});

/** Every command's path ("cron add"), the program itself as "". */
export function commandPaths(io: CliIo): string[] {
  const paths: string[] = [];
  const visit = (command: Command) => {
    paths.push(commandPath(command));
    for (const sub of command.commands) visit(sub);
  };
  visit(commandTree(io));
  return paths;
}

function buildProgram(io: CliIo, setExit: (code: number) => void): Command {
  const program = new Command("missiond").description("owns the time and the lifecycle of AI-agent sessions");
  const ctx = createContext(program, io, setExit);
  const runtime = io.runtime ? ` on node ${io.runtime.version} (${io.runtime.execPath})` : "";
  program.version(`missiond ${VERSION}${runtime}`, "-V, --version", "print the version and the Node it runs on");
  program
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout(s),
      writeErr: (s) => io.stderr(s),
      outputError: (s, write) => write(plainError(s)),
    })
    .showHelpAfterError();
  for (const register of NOUNS) register(program, ctx);
  shareGlobalOptions(program);
  addExamples(program);
  return program;
}
