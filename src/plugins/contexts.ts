import { z } from "zod";
import { CLOSED_RUN_STATUSES, JOB_KINDS, RUN_TRIGGERS, type RunStatus } from "../db/schema/enums.ts";
import type { HookName } from "./hooks.ts";

/**
 * Context shapes of the seven hooks an agent runtime runs through POST /v1/hooks/:hook, exactly
 * as the contract's reference gives them. Validated so a plugin never sees a context its hook
 * does not promise.
 */
const id = z.string().min(1).max(200);
const sshBase = { sessionId: id, agentId: id, sshHostId: id, hostDisplayName: z.string().max(500) };
const sshKind = z.enum(["command", "list_files", "read_file", "write_file", "edit_file", "delete_file"]);
const text = z.string().max(1_000_000);

export const RUNTIME_HOOK_CONTEXTS = {
  systemPrompt: z
    .object({ sessionId: id, agentId: id, sessionKind: z.string().min(1).max(100), systemPrompt: text })
    .strict(),
  userMessageInbound: z
    .object({ sessionId: id, channelId: id.nullable(), text, mediaIds: z.array(id).max(1000) })
    .strict(),
  interAgentMessage: z
    .object({ senderSessionId: id, senderAgentId: id, targetSessionId: id, isSubagentReport: z.boolean(), text })
    .strict(),
  assistantMessageOutbound: z.object({ sessionId: id, channelId: id.nullable(), text }).strict(),
  sshConnectionOpening: z
    .object({
      ...sshBase,
      hostname: z.string().min(1).max(500),
      port: z.number().int().min(1).max(65535).nullable(),
      connectionType: z.enum(["direct", "tunnel"]),
      username: z.string().min(1).max(200),
    })
    .strict(),
  sshCommandSending: z
    .object({
      ...sshBase,
      kind: sshKind,
      command: text.nullable(),
      path: z.string().max(4096).nullable(),
      content: text.nullable(),
      intent: z.string().max(10_000).optional(),
    })
    .strict(),
  sshCommandCompleted: z
    .object({
      ...sshBase,
      kind: sshKind,
      command: text.nullable(),
      path: z.string().max(4096).nullable(),
      exitCode: z.number().int(),
      output: text.nullable(),
      errorOutput: text.nullable(),
      isTruncated: z.boolean(),
      durationMs: z.number().nonnegative(),
    })
    .strict(),
} satisfies Partial<Record<HookName, z.ZodType>>;

export type RuntimeHook = keyof typeof RUNTIME_HOOK_CONTEXTS;
export const isRuntimeHook = (name: string): name is RuntimeHook => Object.hasOwn(RUNTIME_HOOK_CONTEXTS, name);

/**
 * Context shapes of the seven hooks the daemon fires itself, as the places that fire them build
 * them (cron/firing.ts, cron/missions.ts, notify/, todos/, sessions/clears.ts). Not validated at run
 * time (the daemon is their only author); they give the plugin typings their context types.
 */
const count = z.number().int().nonnegative();
export const DAEMON_HOOK_CONTEXTS = {
  todoAdded: z.object({ sessionId: id, texts: z.array(z.string()) }).strict(),
  notifyScheduled: z.object({ sessionId: id, message: z.string(), delaySeconds: z.number() }).strict(),
  notifyDelivered: z.object({ sessionId: id, notifyId: id, message: z.string() }).strict(),
  sessionClearing: z
    .object({
      sessionId: id,
      agentId: id,
      trailingText: z.string().nullable(),
      messageCount: count,
      subagentCount: count,
      peerThreadCount: count,
    })
    .strict(),
  sessionClearCompleted: z
    .object({
      sessionId: id,
      agentId: id,
      deletedMessageCount: count,
      deletedSubagentCount: count,
      deletedPeerThreadCount: count,
    })
    .strict(),
  cronJobFiring: z
    .object({
      cronJobId: id,
      agentId: id,
      kind: z.enum(JOB_KINDS),
      name: z.string(),
      prompt: z.string(),
      trigger: z.enum(RUN_TRIGGERS).describe("What made the run (`event`: a call with one of the job's tokens)."),
      payload: z
        .record(z.string(), z.unknown())
        .optional()
        .describe("An `event` run's JSON body, when the call sent one."),
    })
    .strict(),
  cronJobCompleted: z
    .object({
      cronJobId: id,
      cronJobRunId: id,
      sessionId: id,
      agentId: id,
      status: z.enum(CLOSED_RUN_STATUSES as [RunStatus, ...RunStatus[]]),
    })
    .strict(),
} satisfies Partial<Record<HookName, z.ZodType>>;

/** Every hook's context: what a handler receives. */
export const HOOK_CONTEXTS = { ...RUNTIME_HOOK_CONTEXTS, ...DAEMON_HOOK_CONTEXTS } satisfies Record<
  HookName,
  z.ZodType
>;
export type HookContext<H extends HookName> = z.infer<(typeof HOOK_CONTEXTS)[H]>;
