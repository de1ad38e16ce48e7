import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { loadConfig, type Config } from "../config/load.ts";
import { isMissiondError } from "../errors.ts";
import { canonicalCase } from "../validation.ts";
import { apiClient, ApiError, UnreachableError, type ApiClient, type Target } from "./client.ts";
import { findDaemon, socketCandidates } from "./discovery.ts";
import { EXIT, type CliIo } from "./io.ts";

/** The options every command accepts, declared on the program itself. */
export interface GlobalOptions {
  config?: string;
  socket?: string;
  url?: string;
  token?: string;
  json?: boolean;
}

/** What each command's action needs: the options, the configuration, the daemon, the output. */
export interface CliContext {
  readonly io: CliIo;
  globals(): GlobalOptions;
  config(): Config;
  client(): ApiClient;
  /** JSON with --json, otherwise the human rendering. */
  print(value: unknown, human: () => string): void;
  setExit(code: number): void;
}

/** The global options: the daemon to reach, the configuration, the output. */
const GLOBAL_OPTIONS: readonly (readonly [flags: string, description: string, parse?: (value: string) => string])[] = [
  ["--config <path>", "configuration file (default /etc/missiond/config.toml if present)"],
  ["--socket <path>", "the daemon's Unix socket"],
  ["--url <url>", "reach the daemon over TCP instead (needs --token or MISSIOND_API_TOKEN)", httpUrl],
  ["--token <token>", "bearer token for --url"],
  ["--json", "print JSON instead of tables"],
];

/** The long names of the global options ("--url"): no command may declare one of its own. */
export const GLOBAL_FLAGS: readonly string[] = GLOBAL_OPTIONS.map(([flags]) => flags.split(" ")[0]!);

// The options made from GLOBAL_OPTIONS, on the program and on each command: a command's own option
// of the same name (agent set's --url, the webhook's) is never read as a global one.
const globalCopies = new WeakSet<Option>();

function globalOption(flags: string, description: string, parse?: (value: string) => string): Option {
  const option = new Option(flags, description);
  if (parse) option.argParser(parse);
  globalCopies.add(option);
  return option;
}

/** Declares the global options on `program` and the context its commands read them through. */
export function createContext(program: Command, io: CliIo, setExit: (code: number) => void): CliContext {
  // Each command parses only the options after its own name (set before any command is added, so
  // every command inherits it): `agent set --url` is the webhook's, `missiond --url` the daemon's.
  program.enablePositionalOptions();
  for (const [flags, description, parse] of GLOBAL_OPTIONS) program.addOption(globalOption(flags, description, parse));
  let running: Command = program;
  program.hook("preAction", (_program, action) => void (running = action));
  // Read at action time: commander fills the options in while it parses.
  const globals = (): GlobalOptions => globalsOf(running);
  const config = (): Config =>
    loadConfig({ configPath: globals().config, env: io.env, cwd: io.cwd, hostname: io.hostname, pid: io.probe.pid });
  return {
    io,
    globals,
    config,
    client: () => apiClient(() => target(globals(), io, config)),
    print: (value, human) => io.stdout(`${globals().json ? JSON.stringify(value, null, 2) : human()}\n`),
    setExit,
  };
}

/**
 * Gives every command under `program` the global options it does not declare itself, hidden from
 * its help: with positional options, `missiond cron ls --json` needs `cron ls` to know `--json`.
 * Called once every command is registered.
 */
export function shareGlobalOptions(program: Command): void {
  const visit = (command: Command) => {
    for (const sub of command.commands) {
      for (const [flags, description, parse] of GLOBAL_OPTIONS) {
        const long = flags.split(" ")[0];
        if (!sub.options.some((o) => o.long === long))
          sub.addOption(globalOption(flags, description, parse).hideHelp());
      }
      visit(sub);
    }
  };
  visit(program);
}

/** The global options given anywhere from the program down to `command`; the later one wins. */
function globalsOf(command: Command): GlobalOptions {
  const chain: Command[] = [];
  for (let c: Command | null = command; c; c = c.parent) chain.unshift(c);
  const found: Record<string, unknown> = {};
  for (const c of chain)
    for (const option of c.options) {
      const value: unknown = c.getOptionValue(option.attributeName());
      if (globalCopies.has(option) && value !== undefined) found[option.attributeName()] = value;
    }
  return found as GlobalOptions;
}

/**
 * --url, or --socket, or the socket of --config / $MISSIOND_CONFIG: what the command line names
 * is the only place tried. Otherwise the first socket that answers among the places
 * socketCandidates lists.
 */
async function target(globals: GlobalOptions, io: CliIo, config: () => Config): Promise<Target> {
  if (globals.url) return { url: globals.url, token: globals.token ?? io.env.MISSIOND_API_TOKEN ?? null };
  if (globals.socket) return findDaemon([{ path: globals.socket, source: "--socket" }]);
  if (globals.config || io.env.MISSIOND_CONFIG) {
    return findDaemon([{ path: config().socketPath, source: `socket of ${config().configFile}` }]);
  }
  return findDaemon(socketCandidates({ env: io.env, cwd: io.cwd, configured: config().socketPath }));
}

/** Bad input an action finds itself (after commander's own checks): printed, exit 2. */
export class UsageError extends CommanderError {
  constructor(message: string) {
    super(EXIT.USAGE, "missiond.usage", message);
  }
}

/** A whole number of at least `min`, or the problem in words. */
function wholeNumber(value: string, min: number): number {
  const n = Number(value);
  if (value.trim() === "" || Number.isNaN(n)) throw new InvalidArgumentError("not a number");
  if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`must be a whole number of at least ${min}`);
  return n;
}

/** Commander argument parser for counts. */
export const positiveInt = (value: string): number => wholeNumber(value, 1);

/** Commander argument parser for counts that may be zero. */
export const nonNegativeInt = (value: string): number => wholeNumber(value, 0);

/** Commander argument parser for an http(s) URL (the daemon's, a webhook's). */
export function httpUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError("not a URL: give http(s)://host:port/path");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new InvalidArgumentError(`not an http(s) URL (${url.protocol}): give http(s)://host:port/path`);
  return value;
}

/**
 * Commander's words for a refused option value ("error: option '--limit <n>' argument 'abc' is
 * invalid. not a number") as the CLI's own: "missiond: --limit: not a number".
 */
export function plainError(text: string): string {
  const refused = /^error: option '(?:-\w, )?(--[\w-]+)[^']*' argument '[\s\S]*' is invalid\. ([\s\S]*?)\n?$/.exec(
    text,
  );
  return refused ? `missiond: ${refused[1]}: ${refused[2]}\n` : text;
}

/** An option taking one of `values`, typed in any case (`--status cancelled` is "Cancelled"). */
export function choiceOption(flags: string, description: string, values: readonly string[]): Option {
  // choices() lists the values in --help; the parser replaces its exact-case check.
  return new Option(flags, description).choices(values).argParser((input) => {
    const value = canonicalCase(values, input);
    if (value === undefined) throw new InvalidArgumentError(`Allowed choices are ${values.join(", ")}.`);
    return value;
  });
}

/** Prints what ended an invocation and maps it to the exit code scripts rely on. */
export function reportError(err: unknown, io: CliIo): number {
  // Commander prints its own parse errors; ours (thrown from an action) are printed here.
  if (err instanceof UsageError) {
    io.stderr(`missiond: ${err.message}\n`);
    return EXIT.USAGE;
  }
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  if (err instanceof UnreachableError) {
    io.stderr(`missiond: ${err.message}\n`);
    return EXIT.UNREACHABLE;
  }
  if (err instanceof ApiError) {
    io.stderr(`missiond: ${err.message} (${err.code})\n`);
    return err.status === 404 ? EXIT.NOT_FOUND : err.status === 400 ? EXIT.USAGE : EXIT.ERROR;
  }
  if (isMissiondError(err)) {
    io.stderr(`missiond: ${err.message}\n`);
    return err.code === "NOT_FOUND" ? EXIT.NOT_FOUND : err.status === 400 ? EXIT.USAGE : EXIT.ERROR;
  }
  io.stderr(`missiond: ${(err as Error).message ?? String(err)}\n`);
  return EXIT.ERROR;
}
