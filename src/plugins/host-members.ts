import type { SimplePermission } from "./grants.ts";
import { MAX_HOPS } from "./hooks.ts";

/**
 * The members of a plugin's `host` object, as plugin authors see them: the permission that adds
 * each one (sandbox/bootstrap.ts builds the object from the granted ones), the calls it makes
 * across the boundary (served by host.ts), its TypeScript type and what it does. The plugin
 * typings (`plugins/missiond-plugin.d.ts`) are generated from this table; a unit test holds it to
 * the calls host.ts serves and the bootstrap makes.
 */
export interface HostMember {
  /** The permission that adds the member; null: every plugin has it. */
  readonly permission: SimplePermission | "fetch" | "fs" | "env" | null;
  /** What it calls across the boundary (none: served inside the isolate). */
  readonly calls: readonly string[];
  /** Its type in the typings. */
  readonly type: string;
  readonly doc?: string;
}

const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"];
const USAGE = "{ inputTokens: number; outputTokens: number }";

export const HOST_MEMBERS = {
  log: {
    permission: "log",
    calls: [],
    type: `(level: ${LOG_LEVELS.map((l) => JSON.stringify(l)).join(" | ")}, message: string) => void`,
  },
  clock: { permission: "clock", calls: [], type: "{ now(): number }" },
  config: {
    permission: null,
    calls: [],
    type: "Readonly<Record<string, unknown>>",
    doc: "The plugin's own settings: its [plugin.<name>] table in the config file.",
  },
  store: {
    permission: "store",
    calls: ["store.get", "store.set", "store.delete", "store.list"],
    type: `{
      get(key: string): Promise<unknown>;
      set(key: string, value: unknown): Promise<void>;
      delete(key: string): Promise<boolean>;
      list(prefix?: string): Promise<string[]>;
    }`,
  },
  fetch: {
    permission: "fetch",
    calls: ["fetch"],
    type: `(
      url: string,
      init?: { method?: string; headers?: Record<string, string>; body?: string },
    ) => Promise<{
      status: number;
      ok: boolean;
      url: string;
      headers: Record<string, string>;
      text(): Promise<string>;
      json(): Promise<unknown>;
    }>`,
    doc: "HTTP(S) to the hosts the manifest lists under fetch (redirects are checked against the same list).",
  },
  agents: { permission: "agents", calls: ["agents.list"], type: "{ list(): Promise<{ agents: { id: string }[] }> }" },
  fs: {
    permission: "fs",
    calls: ["fs.read", "fs.write", "fs.list"],
    type: `{
      read(path: string): Promise<string>;
      write(path: string, text: string): Promise<void>;
      list(path: string): Promise<string[]>;
    }`,
    doc: 'Absolute paths inside the manifest\'s fs grants (write needs "read-write").',
  },
  env: {
    permission: "env",
    calls: [],
    type: "Readonly<Record<string, string>>",
    doc: "The environment variables the manifest lists under env (unset ones absent).",
  },
  llm: {
    permission: "llm",
    calls: ["llm.complete"],
    type: `{
      complete(request: {
        prompt?: string;
        messages?: { role: "user" | "assistant"; content: string }[];
        system?: string;
        /** At most the provider's max_tokens (its default). */
        maxTokens?: number;
        temperature?: number;
      }): Promise<{ text: string; usage: ${USAGE}; model: string; provider: string; stopReason: string | null }>;
    }`,
    doc: `A model call through the daemon's [llm] provider for this plugin (permission "llm"). Give
      \`prompt\` or \`messages\`. Counted against the plugin's hourly budget; the time it takes counts
      against the handler's timeout. Rejects on a provider error, a timeout or a used-up budget.`,
  },
  decide: {
    permission: "llm",
    calls: ["llm.decide"],
    type: `(request: {
      question: string;
      options: string[];
      context?: unknown;
      system?: string;
      maxTokens?: number;
      temperature?: number;
    }) => Promise<{ choice: string; reason: string; usage: ${USAGE}; model: string; provider: string }>`,
    doc: `Asks the model to choose one of \`options\` (permission "llm"), as structured output. The
      choice is always one of the options: a model that answers otherwise is asked once more,
      then the promise rejects. \`context\` may be text or any JSON value.`,
  },
  session: {
    permission: "session",
    calls: ["session.info", "session.read", "session.peer.send"],
    type: `{
      readonly id: string;
      info(): Promise<unknown>;
      conversation: { read(options?: { limit?: number }): Promise<{ id: string; role: string; text: string }[]> };
      /** A message into another session: its interAgentMessage chain, transcript and agent (in the background). */
      peer: { send(targetSessionId: string, text: string): Promise<{ queued: true }> };
    }`,
    doc: `The session the hook fired for (the sender's in interAgentMessage); withheld past ${MAX_HOPS} hops.`,
  },
  workspace: {
    permission: "workspace",
    calls: ["workspace.read", "workspace.write", "workspace.list", "workspace.stat"],
    type: `{
      read(path: string): Promise<string>;
      write(path: string, text: string): Promise<void>;
      list(path?: string): Promise<string[]>;
      stat(path: string): Promise<{ type: "file" | "directory" | "other"; size: number; modifiedAt: string } | null>;
    }`,
    doc: "Paths relative to the workspace of the hook's agent; on hooks that carry an agent only.",
  },
  ssh: {
    permission: "ssh",
    calls: ["ssh.command"],
    type: `{
      command(
        command: string,
        options?: { timeoutSeconds?: number },
      ): Promise<{ exitCode: number; output: string; errorOutput: string; isTruncated: boolean; durationMs: number }>;
    }`,
    doc: "The server the SSH hook fired for; in the three SSH hooks only.",
  },
} as const satisfies Record<string, HostMember>;

export type HostMemberName = keyof typeof HOST_MEMBERS;
