import type { ProcessProbe } from "../db/lock.ts";

/** Everything the CLI needs from the process, handed in by main.ts (the only file touching it). */
export interface CliIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly hostname: string;
  readonly probe: ProcessProbe;
  /** Whether stdout is a terminal: logs are then written for a person, not as JSON. */
  readonly stdoutIsTty?: boolean;
  /** Whether stdin is a terminal a person can answer a question on (`plugins install`). */
  readonly stdinIsTty?: boolean;
  /** Asks a yes/no question on the terminal; resolves true for yes. */
  confirm?(question: string): Promise<boolean>;
  /** The Node running this process, for `missiond --version`. */
  readonly runtime?: { readonly version: string; readonly execPath: string };
  stdout(text: string): void;
  stderr(text: string): void;
  /** Registers a handler for SIGTERM / SIGINT. */
  onSignal(handler: (signal: string) => void): void;
  /** Registers a handler for SIGHUP (`systemctl reload`): the daemon reloads its plugins. */
  onHangup?(handler: () => void): void;
  /** Ends the process at once (a second signal during shutdown). */
  forceExit(code: number): never;
}

/** Exit codes scripts can rely on. */
export const EXIT = {
  OK: 0,
  ERROR: 1,
  USAGE: 2,
  UNREACHABLE: 3,
  NOT_FOUND: 4,
} as const;
