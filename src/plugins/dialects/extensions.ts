import type { Registration } from "../isolate.ts";
import { failure } from "./results.ts";
import type { DialectRunner } from "./runner.ts";

/** What ended an intercept chain early: { block } or { result } for tool.call, { handled: true } for prompt. */
function ends(name: string, value: unknown): boolean {
  if (value === null || typeof value !== "object") return false;
  if (name === "tool.call") return "block" in value || "result" in value;
  if (name === "prompt") return (value as { handled?: unknown }).handled === true;
  return false;
}

/** `match` names tools, MCP servers or providers: any of those the input names. */
function matches(match: readonly string[] | null, input: unknown): boolean {
  if (!match) return true;
  if (input === null || typeof input !== "object") return false;
  const fields = input as Record<string, unknown>;
  const descriptor = fields.descriptor as Record<string, unknown> | undefined;
  const names = [fields.name, fields.tool, fields.toolName, fields.server, fields.provider, descriptor?.key];
  return names.some((n) => typeof n === "string" && match.includes(n));
}

const order = (r: Registration): number => Number(r.key.slice(r.key.lastIndexOf("#") + 1));

/**
 * One intercept chain: extensions in load order, then priority (higher first), then registration
 * order. `undefined` keeps the result so far; a throw, a timeout or (for tracing.redact) a promise
 * skips the handler and counts against its extension.
 */
export async function intercept(
  runner: DialectRunner,
  name: string,
  input: unknown,
  start: unknown,
): Promise<{ result: unknown; endedBy: string | null }> {
  let current = start;
  for (const member of runner.members("extension")) {
    const all = (await member.handle.registrations(runner.options.handlerTimeoutMs)) as readonly Registration[];
    const chain = all
      .filter((r) => r.kind === "intercept" && r.event === name && matches(r.match, input))
      .sort((a, b) => b.priority - a.priority || order(a) - order(b));
    for (const reg of chain) {
      if (runner.isSuspended(member.name)) break; // its budget ran out earlier in this chain
      let returned: unknown;
      const verdict = await runner.call(member, name, reg.key, { context: { input, current } }, {}, (raw) => {
        const failed = failure(raw);
        if (failed) return failed;
        returned = (raw as { value?: unknown }).value;
        return returned === undefined ? { kind: "passed" } : { kind: "changed", patch: { current: returned } };
      });
      if (verdict.kind !== "changed" || member.shadow) continue;
      current = returned;
      if (ends(name, current)) return { result: current, endedBy: member.name };
    }
  }
  return { result: current, endedBy: null };
}

/** Calls every observer of `event` without waiting for them (a session filter applies). */
export function observe(runner: DialectRunner, event: string, payload: Record<string, unknown>): number {
  let started = 0;
  for (const member of runner.members("extension")) {
    runner.detach(
      member.handle.registrations(runner.options.handlerTimeoutMs).then(async (all) => {
        const observers = (all as readonly Registration[]).filter(
          (r) => r.kind === "on" && r.event === event && (!r.sessionId || r.sessionId === payload.sessionId),
        );
        for (const reg of observers) {
          await runner.call(
            member,
            event,
            reg.key,
            { context: payload },
            payload,
            (raw) => failure(raw) ?? { kind: "passed" },
          );
        }
      }),
    );
    started++;
  }
  return started;
}
