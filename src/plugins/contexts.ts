import { z } from "zod";
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
