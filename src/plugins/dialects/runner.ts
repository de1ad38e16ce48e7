import type { Logger } from "../../log.ts";
import type { Decision } from "../chain.ts";
import type { Registration } from "../isolate.ts";
import type { DialectHandle, DialectPayload } from "../loader.ts";
import type { RawOutcome } from "../result.ts";
import { eventMatches } from "./python-folder.ts";
import { failure, gatewayVerdict, pythonVerdict, type Verdict } from "./results.ts";

export interface DialectMember {
  readonly name: string;
  readonly shadow: boolean;
  readonly handle: DialectHandle;
}

export interface DialectOptions {
  /** In chain order (the manifest's order, then name): the order of the plugins in the configuration. */
  members: readonly DialectMember[];
  handlerTimeoutMs: number;
  /** Throws and timeouts after which an extension's observers and interceptors stop running (0 = never). */
  errorBudget: number;
  log: Logger;
  now: () => number;
  onDecision: (decision: Omit<Decision, "generation">) => void;
}

/** What a sequence of handlers made of one call. */
export interface DialectOutcome {
  /** The call's fields after every handler that changed them. */
  readonly value: Record<string, unknown>;
  readonly blocked: { readonly reason: string; readonly plugin: string } | null;
  readonly changedBy: readonly string[];
}

/** A Python plugin's system prompt section: not a hook, run only by sections.ts. */
const isSection = (r: object): boolean => (r as { kind?: string }).kind === "section";

const subjectOf = (data: Record<string, unknown>): string | null => {
  for (const key of ["sessionKey", "sessionId", "session_id", "task_id", "session_key"]) {
    if (typeof data[key] === "string" && data[key] !== "") return data[key];
  }
  return null;
};

/**
 * Runs the handlers of plugins written for the other hook systems (gateway plugins, Python
 * plugins and event hooks, extensions), each handler recorded in the decision log under its
 * plugin's name and the hook system's own name for the moment.
 */
export class DialectRunner {
  readonly options: DialectOptions;
  private readonly detached = new Set<Promise<unknown>>();
  /** Handlers skipped (throws, timeouts, malformed results) per plugin, shown by the plugin list. */
  readonly errors = new Map<string, number>();
  /** Extensions whose error budget is spent: skipped until the plugins load again. */
  private readonly suspended = new Set<string>();

  constructor(options: DialectOptions) {
    this.options = options;
  }

  members(...kinds: DialectHandle["kind"][]): readonly DialectMember[] {
    return this.options.members.filter((m) => kinds.includes(m.handle.kind) && !this.suspended.has(m.name));
  }

  isSuspended(name: string): boolean {
    return this.suspended.has(name);
  }

  /** Counts a skipped handler; an extension that spent its budget is suspended, once, with a log line. */
  private countError(member: DialectMember, why: string): void {
    const errors = (this.errors.get(member.name) ?? 0) + 1;
    this.errors.set(member.name, errors);
    const { errorBudget, log } = this.options;
    if (member.handle.kind !== "extension" || errorBudget === 0 || errors < errorBudget) return;
    if (this.suspended.has(member.name)) return;
    this.suspended.add(member.name);
    log.warn(
      { plugin: member.name, errors, last: why },
      `extension ${member.name} suspended: ${errors} errors spent its error budget (last: ${why}); its observers and interceptors run again after a reload`,
    );
  }

  /** Calls one handler and records what it did. */
  async call(
    member: DialectMember,
    hook: string,
    key: string,
    payload: DialectPayload,
    subject: Record<string, unknown>,
    judge: (raw: RawOutcome) => Verdict,
  ): Promise<Verdict> {
    const { now, handlerTimeoutMs, onDecision, log } = this.options;
    const started = now();
    const subjectId = subjectOf(subject);
    const raw = await member.handle.call(key, payload, handlerTimeoutMs, { sessionId: subjectId, hop: 0 });
    const verdict = judge(raw);
    const reason = verdict.kind === "cancelled" ? verdict.reason : verdict.kind === "skipped" ? verdict.why : null;
    if (verdict.kind === "skipped") {
      log.warn(
        { plugin: member.name, hook, why: verdict.why },
        `handler skipped: ${member.name}.${hook} ${verdict.why}`,
      );
      this.countError(member, verdict.why);
    }
    onDecision({
      plugin: member.name,
      hook,
      subjectId,
      at: new Date(started),
      durationMs: now() - started,
      outcome: verdict.kind,
      fields: verdict.kind === "changed" ? Object.keys(verdict.patch) : null,
      reason: reason === null ? null : reason.slice(0, 500),
      shadow: member.shadow,
    });
    return verdict;
  }

  /** Gateway plugins: each registration for `hook`, in configuration order, stopping at a block or deny. */
  async gateway(hook: string, event: Record<string, unknown>): Promise<DialectOutcome> {
    return this.sequence(this.members("gateway"), hook, event, (member, reg, current) =>
      this.call(member, hook, reg.key, { context: current }, current, (raw) => gatewayVerdict(hook, raw, current)),
    );
  }

  /** Whether a loaded Python plugin registered a callback for `hook` (its own hook names included). */
  async pythonRegistered(hook: string): Promise<boolean> {
    for (const member of this.members("python", "shell-hook")) {
      const registrations = await member.handle.registrations(this.options.handlerTimeoutMs);
      if (registrations.some((r) => r.event === hook && !isSection(r))) return true;
    }
    return false;
  }

  /**
   * Python plugins' callbacks registered for `hook`, called with the fields as keyword arguments,
   * and shell hooks (config.yaml) for it, in the same chain order.
   */
  async python(hook: string, kwargs: Record<string, unknown>): Promise<DialectOutcome> {
    const contexts: string[] = [];
    const outcome = await this.sequence(
      this.members("python", "shell-hook"),
      hook,
      kwargs,
      async (member, reg, current) => {
        const verdict = await this.call(member, hook, reg.key, { kwargs: current }, current, (raw) =>
          pythonVerdict(hook, raw),
        );
        // pre_llm_call: every plugin's context is kept, in order, not replaced.
        if (verdict.kind === "changed" && typeof verdict.patch.context === "string")
          contexts.push(verdict.patch.context);
        return verdict;
      },
    );
    if (hook !== "pre_llm_call") return outcome;
    return { ...outcome, value: { ...outcome.value, context: contexts.length > 0 ? contexts.join("\n\n") : null } };
  }

  /** Event hooks (HOOK.yaml) listening to `eventType`: handle(event_type, context), observe-only. */
  async eventHooks(eventType: string, context: Record<string, unknown>): Promise<string[]> {
    const ran: string[] = [];
    for (const member of this.members("event-hook")) {
      if (!member.handle.events.some((pattern) => eventMatches(pattern, eventType))) continue;
      ran.push(member.name);
      await this.call(
        member,
        eventType,
        "handle",
        { args: [eventType, context] },
        context,
        (raw) => failure(raw) ?? { kind: "passed" },
      );
    }
    return ran;
  }

  private async sequence(
    members: readonly DialectMember[],
    hook: string,
    start: Record<string, unknown>,
    run: (member: DialectMember, reg: { key: string }, current: Record<string, unknown>) => Promise<Verdict>,
  ): Promise<DialectOutcome> {
    let value = { ...start };
    const changedBy: string[] = [];
    for (const member of members) {
      const registrations = (await member.handle.registrations(this.options.handlerTimeoutMs)).filter(
        (r) => r.event === hook && (r as Partial<Registration>).kind !== "on" && !isSection(r),
      );
      const applies = member.handle.applies?.bind(member.handle);
      for (const reg of registrations) {
        if (applies && !applies(reg.key, value)) continue;
        const verdict = await run(member, reg, value);
        if (member.shadow) continue;
        if (verdict.kind === "cancelled")
          return { value, blocked: { reason: verdict.reason, plugin: member.name }, changedBy };
        if (verdict.kind === "changed") {
          value = { ...value, ...verdict.patch };
          if (!changedBy.includes(member.name)) changedBy.push(member.name);
        }
      }
    }
    return { value, blocked: null, changedBy };
  }

  /** Runs work without holding up the caller; drain() waits for it (on shutdown). */
  detach(work: Promise<unknown>): void {
    const tracked = work.catch((err: Error) => this.options.log.error({ err }, "detached hook failed"));
    this.detached.add(tracked);
    void tracked.finally(() => this.detached.delete(tracked));
  }

  async drain(): Promise<void> {
    while (this.detached.size > 0) await Promise.allSettled([...this.detached]);
  }
}
