/**
 * The closed list of hook points and, for each, what a handler may change. This table is the
 * contract's "Hook reference" made executable: return conventions and validation follow from it.
 *
 * - one mutable field  → the handler returns the new value itself;
 * - several fields     → it returns an object with the fields it changes (omitted fields kept);
 * - no field           → observe-only, the return value is ignored.
 */

export type FieldType = "string" | "string[]" | "number" | "nullableString";

export interface HookSpec {
  /** Context fields a handler may change, with their types. */
  readonly fields: Readonly<Record<string, FieldType>>;
  readonly canCancel: boolean;
  /** `tools.defer({ until, reason })` is accepted (our addition; cron slots only). */
  readonly canDefer?: boolean;
  /** Fired by the daemon itself (true) or run for an agent runtime over POST /v1/hooks/:hook. */
  readonly firedByDaemon: boolean;
  /** The context field naming what the hook is about, for the decision log. */
  readonly subject: string;
}

export const HOOKS = {
  systemPrompt: { fields: { systemPrompt: "string" }, canCancel: false, firedByDaemon: false, subject: "sessionId" },
  userMessageInbound: { fields: { text: "string" }, canCancel: true, firedByDaemon: false, subject: "sessionId" },
  interAgentMessage: { fields: { text: "string" }, canCancel: true, firedByDaemon: false, subject: "senderSessionId" },
  assistantMessageOutbound: { fields: { text: "string" }, canCancel: true, firedByDaemon: false, subject: "sessionId" },
  todoAdded: { fields: { texts: "string[]" }, canCancel: true, firedByDaemon: true, subject: "sessionId" },
  notifyScheduled: {
    fields: { message: "string", delaySeconds: "number" },
    canCancel: true,
    firedByDaemon: true,
    subject: "sessionId",
  },
  notifyDelivered: { fields: { message: "string" }, canCancel: true, firedByDaemon: true, subject: "notifyId" },
  sshConnectionOpening: { fields: {}, canCancel: true, firedByDaemon: false, subject: "sshHostId" },
  sshCommandSending: {
    fields: { command: "nullableString", path: "nullableString", content: "nullableString" },
    canCancel: true,
    firedByDaemon: false,
    subject: "sshHostId",
  },
  sshCommandCompleted: {
    fields: { output: "nullableString", errorOutput: "nullableString" },
    canCancel: true,
    firedByDaemon: false,
    subject: "sshHostId",
  },
  sessionClearing: { fields: {}, canCancel: false, firedByDaemon: true, subject: "sessionId" },
  sessionClearCompleted: { fields: {}, canCancel: false, firedByDaemon: true, subject: "sessionId" },
  cronJobFiring: {
    fields: { prompt: "string" },
    canCancel: true,
    canDefer: true,
    firedByDaemon: true,
    subject: "cronJobId",
  },
  cronJobCompleted: { fields: {}, canCancel: false, firedByDaemon: true, subject: "cronJobRunId" },
} as const satisfies Record<string, HookSpec>;

export type HookName = keyof typeof HOOKS;
export const HOOK_NAMES = Object.keys(HOOKS) as HookName[];

export const isHookName = (name: string): name is HookName => Object.hasOwn(HOOKS, name);

/** Cancel reasons are recorded up to this many characters (the contract's limit). */
export const MAX_REASON_CHARS = 500;

/** Past this many hops from one original event, host.session is withheld (loop protection). */
export const MAX_HOPS = 4;

/**
 * The session a hook fired for (what host.session refers to): the sender's for
 * interAgentMessage, none for cronJobFiring, the context's sessionId otherwise.
 */
export function sessionOf(hook: HookName, context: Readonly<Record<string, unknown>>): string | null {
  if (hook === "cronJobFiring") return null;
  const value = hook === "interAgentMessage" ? context.senderSessionId : context.sessionId;
  return typeof value === "string" && value.length > 0 ? value : null;
}

/** The hooks fired for one SSH server: host.ssh.command reaches that server, and only in these. */
export const SSH_HOOKS: ReadonlySet<HookName> = new Set([
  "sshConnectionOpening",
  "sshCommandSending",
  "sshCommandCompleted",
]);

/**
 * The agent a hook fired for (what host.workspace works for): the sender's for interAgentMessage,
 * the context's agentId on the hooks that carry one, none otherwise.
 */
export function agentOf(hook: HookName, context: Readonly<Record<string, unknown>>): string | null {
  const value = hook === "interAgentMessage" ? context.senderAgentId : context.agentId;
  return typeof value === "string" && value.length > 0 ? value : null;
}

/** What an invocation carries besides its context. */
export interface InvocationMeta {
  readonly sessionId: string | null;
  /** Generations of work caused through host.* since the original event (0 = the event itself). */
  readonly hop: number;
  /** The agent the hook fired for (host.workspace); absent or null when it carries none. */
  readonly agentId?: string | null;
  /** The SSH server the hook fired for (host.ssh); set on the three SSH hooks only. */
  readonly sshHostId?: string | null;
}

/** What the daemon, from the hook and its context, says one invocation is for. */
export function invocationMeta(
  hook: HookName,
  context: Readonly<Record<string, unknown>>,
  hop: number,
): InvocationMeta {
  const sshHostId = SSH_HOOKS.has(hook) && typeof context.sshHostId === "string" ? context.sshHostId : null;
  return { sessionId: sessionOf(hook, context), hop, agentId: agentOf(hook, context), sshHostId };
}

/** Edit distance (insert, delete, substitute one character), for "did you mean". */
export function levenshtein(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The closest hook name to a misspelt one, when it is close enough to be what was meant. */
export function closestHook(name: string): HookName | null {
  // A quarter of the name (at least 2) covers a slip or a wrong tense, not another word.
  const limit = Math.max(2, Math.floor(name.length / 4));
  let best: { hook: HookName; distance: number } | null = null;
  for (const hook of HOOK_NAMES) {
    const distance = levenshtein(name.toLowerCase(), hook.toLowerCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { hook, distance };
  }
  return best?.hook ?? null;
}

/** `cronJobFirng (did you mean cronJobFiring?)`, or the name alone when nothing is close. */
export function describeUnknownHook(name: string): string {
  const closest = closestHook(name);
  return closest ? `${name} (did you mean ${closest}?)` : name;
}
