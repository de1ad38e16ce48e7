/**
 * The closed list of hook points and, for each, what a handler may change. This table is the
 * contract's "Hook reference" made executable: return conventions and validation follow from it.
 *
 * - one mutable field  → the handler returns the new value itself;
 * - several fields     → it returns an object with the fields it changes (omitted fields kept);
 * - no field           → observe-only, the return value is ignored.
 */
import { nearest } from "../did-you-mean.ts";

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
  /** When it fires and what a handler's answer does: the plugin typings' documentation of the hook. */
  readonly doc: string;
}

export const HOOKS = {
  systemPrompt: {
    fields: { systemPrompt: "string" },
    canCancel: false,
    firedByDaemon: false,
    subject: "sessionId",
    doc: "The system prompt of a model request, before the runtime sends it: return the new prompt.",
  },
  userMessageInbound: {
    fields: { text: "string" },
    canCancel: true,
    firedByDaemon: false,
    subject: "sessionId",
    doc: "A message from a user, before the agent sees it: return the new text, or cancel to drop it.",
  },
  interAgentMessage: {
    fields: { text: "string" },
    canCancel: true,
    firedByDaemon: false,
    subject: "senderSessionId",
    doc: "A message from one agent's session to another's: return the new text, or cancel to drop it.",
  },
  assistantMessageOutbound: {
    fields: { text: "string" },
    canCancel: true,
    firedByDaemon: false,
    subject: "sessionId",
    doc: "An agent's reply, before it reaches people: return the new text, or cancel to withhold it.",
  },
  todoAdded: {
    fields: { texts: "string[]" },
    canCancel: true,
    firedByDaemon: true,
    subject: "sessionId",
    doc: "Todos a session adds, before they are written: return the texts to keep (rewritten, split or fewer), or cancel the batch.",
  },
  notifyScheduled: {
    fields: { message: "string", delaySeconds: "number" },
    canCancel: true,
    firedByDaemon: true,
    subject: "sessionId",
    doc: "A notify timer being set: return the fields to change (message, delaySeconds), or cancel it.",
  },
  notifyDelivered: {
    fields: { message: "string" },
    canCancel: true,
    firedByDaemon: true,
    subject: "notifyId",
    doc: "A notify timer at its due moment, before the note goes to its agent: return the new message, or cancel to drop it.",
  },
  sshConnectionOpening: {
    fields: {},
    canCancel: true,
    firedByDaemon: false,
    subject: "sshHostId",
    doc: "An SSH connection about to open: cancel to refuse it (observe-only otherwise).",
  },
  sshCommandSending: {
    fields: { command: "nullableString", path: "nullableString", content: "nullableString" },
    canCancel: true,
    firedByDaemon: false,
    subject: "sshHostId",
    doc: "A command or file operation about to be sent to an SSH server: return the fields to change, or cancel it.",
  },
  sshCommandCompleted: {
    fields: { output: "nullableString", errorOutput: "nullableString" },
    canCancel: true,
    firedByDaemon: false,
    subject: "sshHostId",
    doc: "What an SSH command printed, before the model sees it: return the fields to change (output, errorOutput), or cancel.",
  },
  sessionClearing: {
    fields: {},
    canCancel: false,
    firedByDaemon: true,
    subject: "sessionId",
    doc: "A session about to be cleared, awaited before the deletion: the last chance to read its transcript (observe-only).",
  },
  sessionClearCompleted: {
    fields: {},
    canCancel: false,
    firedByDaemon: true,
    subject: "sessionId",
    doc: "A session's clear is done, with what it deleted (observe-only).",
  },
  cronJobFiring: {
    fields: { prompt: "string" },
    canCancel: true,
    canDefer: true,
    firedByDaemon: true,
    subject: "cronJobId",
    doc: "A cron job's slot at its moment, before the mission goes out: return the new prompt, cancel the slot, defer it with tools.defer, or make it wait for an operator's approval with tools.requireApproval.",
  },
  cronJobCompleted: {
    fields: {},
    canCancel: false,
    firedByDaemon: true,
    subject: "cronJobRunId",
    doc: "A run closed (at most once, never for a Cancelled run), detached from the close (observe-only).",
  },
} as const satisfies Record<string, HookSpec>;

export type HookName = keyof typeof HOOKS;
export const HOOK_NAMES = Object.keys(HOOKS) as HookName[];

export const isHookName = (name: string): name is HookName => Object.hasOwn(HOOKS, name);

/** The field a hook's handler answers with by itself (the new value); null when it answers with an object or nothing. */
export function singleField(hook: HookName): string | null {
  const fields = Object.keys(HOOKS[hook].fields);
  return fields.length === 1 ? fields[0]! : null;
}

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

/** The closest hook name to a misspelt one, when it is close enough to be what was meant. */
export function closestHook(name: string): HookName | null {
  // A quarter of the name (at least 2) covers a slip or a wrong tense, not another word.
  return nearest(name, HOOK_NAMES, Math.max(2, Math.floor(name.length / 4))) as HookName | null;
}

/** `cronJobFirng (did you mean cronJobFiring?)`, or the name alone when nothing is close. */
export function describeUnknownHook(name: string): string {
  const closest = closestHook(name);
  return closest ? `${name} (did you mean ${closest}?)` : name;
}
