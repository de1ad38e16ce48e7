// Types for plugins written in TypeScript: the globals a plugin's isolate provides (besides the
// ECMAScript built-ins and console). Optional host members exist only when the manifest grants
// the matching permission.

type Cancellation = { readonly reason: string };
type Deferral = { readonly until: unknown; readonly reason: string };

interface MiddlewareTools {
  cancel(reason?: string): Cancellation;
  /** cronJobFiring only: hold the slot until a later time (recorded as Deferred). */
  defer(options: { until: Date | string | number; reason?: string }): Deferral;
}

type Handler<C, R> = (
  context: C,
  tools: MiddlewareTools,
) => Promise<R | Cancellation | Deferral> | R | Cancellation | Deferral;

interface MissiondMiddleware {
  systemPrompt?: (context: {
    sessionId: string;
    agentId: string;
    sessionKind: string;
    systemPrompt: string;
  }) => Promise<string> | string;
  userMessageInbound?: Handler<
    { sessionId: string; channelId: string | null; text: string; mediaIds: string[] },
    string
  >;
  interAgentMessage?: Handler<
    {
      senderSessionId: string;
      senderAgentId: string;
      targetSessionId: string;
      isSubagentReport: boolean;
      text: string;
    },
    string
  >;
  assistantMessageOutbound?: Handler<{ sessionId: string; channelId: string | null; text: string }, string>;
  todoAdded?: Handler<{ sessionId: string; texts: string[] }, string[]>;
  notifyScheduled?: Handler<
    { sessionId: string; message: string; delaySeconds: number },
    { message?: string; delaySeconds?: number }
  >;
  notifyDelivered?: Handler<{ sessionId: string; notifyId: string; message: string }, string>;
  sshConnectionOpening?: Handler<
    {
      sessionId: string;
      agentId: string;
      sshHostId: string;
      hostDisplayName: string;
      hostname: string;
      port: number | null;
      connectionType: "direct" | "tunnel";
      username: string;
    },
    void
  >;
  sshCommandSending?: Handler<
    {
      sessionId: string;
      agentId: string;
      sshHostId: string;
      hostDisplayName: string;
      kind: string;
      command: string | null;
      path: string | null;
      content: string | null;
      intent?: string;
    },
    { command?: string; path?: string; content?: string }
  >;
  sshCommandCompleted?: Handler<
    {
      sessionId: string;
      agentId: string;
      sshHostId: string;
      hostDisplayName: string;
      kind: string;
      command: string | null;
      path: string | null;
      exitCode: number;
      output: string | null;
      errorOutput: string | null;
      isTruncated: boolean;
      durationMs: number;
    },
    { output?: string; errorOutput?: string }
  >;
  sessionClearing?: Handler<
    {
      sessionId: string;
      agentId: string;
      trailingText: string | null;
      messageCount: number;
      subagentCount: number;
      peerThreadCount: number;
    },
    void
  >;
  sessionClearCompleted?: Handler<
    {
      sessionId: string;
      agentId: string;
      deletedMessageCount: number;
      deletedSubagentCount: number;
      deletedPeerThreadCount: number;
    },
    void
  >;
  cronJobFiring?: Handler<{ cronJobId: string; agentId: string; kind: string; name: string; prompt: string }, string>;
  cronJobCompleted?: Handler<
    { cronJobId: string; cronJobRunId: string; sessionId: string; agentId: string; status: string },
    void
  >;
}

interface MissiondHost {
  log?(level: "trace" | "debug" | "info" | "warn" | "error" | "fatal", message: string): void;
  clock?: { now(): number };
  config: Readonly<Record<string, unknown>>;
  store?: {
    get(key: string): Promise<unknown>;
    set(key: string, value: unknown): Promise<void>;
    delete(key: string): Promise<boolean>;
    list(prefix?: string): Promise<string[]>;
  };
  fetch?(
    url: string,
    init?: { method?: string; headers?: Record<string, string>; body?: string },
  ): Promise<{
    status: number;
    ok: boolean;
    headers: Record<string, string>;
    text(): Promise<string>;
    json(): Promise<unknown>;
  }>;
  agents?: { list(): Promise<{ agents: { id: string }[] }> };
  /** Absolute paths inside the manifest's fs grants (write needs "read-write"). */
  fs?: {
    read(path: string): Promise<string>;
    write(path: string, text: string): Promise<void>;
    list(path: string): Promise<string[]>;
  };
  /** The environment variables the manifest lists under env (unset ones absent). */
  env?: Readonly<Record<string, string>>;
  /**
   * A model call through the daemon's [llm] provider for this plugin (permission "llm"). Give
   * `prompt` or `messages`. Counted against the plugin's hourly budget; the time it takes counts
   * against the handler's timeout. Rejects on a provider error, a timeout or a used-up budget.
   */
  llm?: {
    complete(request: {
      prompt?: string;
      messages?: { role: "user" | "assistant"; content: string }[];
      system?: string;
      /** At most the provider's max_tokens (its default). */
      maxTokens?: number;
      temperature?: number;
    }): Promise<{
      text: string;
      usage: { inputTokens: number; outputTokens: number };
      model: string;
      provider: string;
      stopReason: string | null;
    }>;
  };
  /**
   * Asks the model to choose one of `options` (permission "llm"), as structured output. The
   * choice is always one of the options: a model that answers otherwise is asked once more,
   * then the promise rejects. `context` may be text or any JSON value.
   */
  decide?(request: {
    question: string;
    options: string[];
    context?: unknown;
    system?: string;
    maxTokens?: number;
    temperature?: number;
  }): Promise<{
    choice: string;
    reason: string;
    usage: { inputTokens: number; outputTokens: number };
    model: string;
    provider: string;
  }>;
  /** The session the hook fired for (the sender's in interAgentMessage); withheld past 4 hops. */
  session?: {
    readonly id: string;
    info(): Promise<unknown>;
    conversation: { read(options?: { limit?: number }): Promise<{ id: string; role: string; text: string }[]> };
    /** A message into another session: its interAgentMessage chain, transcript and agent (in the background). */
    peer: { send(targetSessionId: string, text: string): Promise<{ queued: true }> };
  };
  /** Paths relative to the workspace of the hook's agent; on hooks that carry an agent only. */
  workspace?: {
    read(path: string): Promise<string>;
    write(path: string, text: string): Promise<void>;
    list(path?: string): Promise<string[]>;
    stat(path: string): Promise<{ type: "file" | "directory" | "other"; size: number; modifiedAt: string } | null>;
  };
  /** The server the SSH hook fired for; in the three SSH hooks only. */
  ssh?: {
    command(
      command: string,
      options?: { timeoutSeconds?: number },
    ): Promise<{ exitCode: number; output: string; errorOutput: string; isTruncated: boolean; durationMs: number }>;
  };
}

declare var middleware: MissiondMiddleware;
declare var host: MissiondHost;
