import { describe, expect, it } from "vitest";
import { PluginChain, type ChainPlugin, type Decision } from "../../src/plugins/chain.ts";
import type { HookName } from "../../src/plugins/hooks.ts";
import type { RawOutcome } from "../../src/plugins/result.ts";
import { createLogger } from "../../src/log.ts";

type Handler = (context: Record<string, unknown>) => RawOutcome | Promise<RawOutcome>;

const plugin = (
  name: string,
  handler: Handler,
  options: { required?: boolean; shadow?: boolean; hooks?: HookName[] } = {},
): ChainPlugin & { calls: Record<string, unknown>[] } => {
  const calls: Record<string, unknown>[] = [];
  return {
    name,
    required: options.required ?? false,
    shadow: options.shadow ?? false,
    hooks: new Set(options.hooks ?? ["cronJobFiring"]),
    calls,
    async invoke(_hook, context) {
      calls.push(context);
      return handler(context);
    },
  };
};
const value = (v: unknown): RawOutcome => ({ outcome: "value", value: v });
const appending =
  (suffix: string): Handler =>
  (ctx) =>
    value(`${ctx.prompt as string}${suffix}`);

const firing = { cronJobId: "42", agentId: "a1", kind: "cron_job", name: "nightly", prompt: "check" };

function chainOf(plugins: ChainPlugin[]) {
  const decisions: Decision[] = [];
  let t = 0;
  const chain = new PluginChain({
    plugins,
    handlerTimeoutMs: 5_000,
    log: createLogger("silent"),
    now: () => (t += 1),
    onDecision: (d) => decisions.push(d),
  });
  return { chain, decisions };
}

describe("the plugin chain", () => {
  it("runs handlers in the given order, each seeing the previous one's output", async () => {
    const a = plugin("a", appending("+a"));
    const b = plugin("b", appending("+b"));
    const { chain } = chainOf([a, b]);
    const result = await chain.run("cronJobFiring", firing);
    expect(result).toMatchObject({ kind: "passed", context: { prompt: "check+a+b" }, changedBy: ["a", "b"] });
    expect(b.calls[0]!.prompt).toBe("check+a");
  });

  it("stops at a cancel: later handlers are not called and the reason and plugin are reported", async () => {
    const a = plugin("a", () => ({ outcome: "cancel", reason: "maintenance window" }));
    const b = plugin("b", appending("+b"));
    const { chain } = chainOf([a, b]);
    expect(await chain.run("cronJobFiring", firing)).toMatchObject({
      kind: "cancelled",
      reason: "maintenance window",
      plugin: "a",
    });
    expect(b.calls).toHaveLength(0);
  });

  it("cuts a cancel reason at 500 characters", async () => {
    const { chain } = chainOf([plugin("a", () => ({ outcome: "cancel", reason: "x".repeat(2_000) }))]);
    const result = await chain.run("cronJobFiring", firing);
    expect(result.kind === "cancelled" && result.reason.length).toBe(500);
  });

  const failOpenCases: [string, Handler, RegExp][] = [
    ["throws", () => ({ outcome: "threw", message: "boom" }), /threw: boom/],
    ["returns undefined", () => value(undefined), /malformed: returned undefined/],
    ["returns a number where a string is owed", () => value(7), /malformed: returned a number/],
    ["returns an object where a string is owed", () => value({ prompt: "x" }), /malformed: returned a object/],
    ["times out", () => ({ outcome: "timeout" }), /timeout/],
    ["crashes its worker", () => ({ outcome: "crashed", message: "worker exited with code 1" }), /crashed/],
  ];
  for (const [what, handler, why] of failOpenCases) {
    it(`skips a handler that ${what}, keeps the value and lets the next handler run`, async () => {
      const { chain, decisions } = chainOf([plugin("broken", handler), plugin("good", appending("+good"))]);
      const result = await chain.run("cronJobFiring", firing);
      expect(result).toMatchObject({ kind: "passed", context: { prompt: "check+good" } });
      expect(decisions[0]).toMatchObject({ plugin: "broken", outcome: "skipped", subjectId: "42" });
      expect(decisions[0]!.reason).toMatch(why);
    });
  }

  it("fails closed for a required plugin on a hook that can cancel", async () => {
    const { chain } = chainOf([
      plugin("gate", () => ({ outcome: "timeout" }), { required: true }),
      plugin("good", appending("+good")),
    ]);
    const result = await chain.run("cronJobFiring", firing);
    expect(result).toMatchObject({ kind: "cancelled", plugin: "gate" });
    expect(result.kind === "cancelled" && result.reason).toMatch(
      /required plugin gate failed \(timeout\); failing closed/,
    );
  });

  it("records passed when a handler returns the value unchanged, and only handlers that ran", async () => {
    const idle = plugin("idle", appending("!"), { hooks: ["systemPrompt"] });
    const { chain, decisions } = chainOf([plugin("same", (ctx) => value(ctx.prompt)), idle]);
    await chain.run("cronJobFiring", firing);
    expect(decisions.map((d) => [d.plugin, d.outcome])).toEqual([["same", "passed"]]);
    expect(idle.calls).toHaveLength(0);
  });

  it("applies a partial object on a hook with several fields, keeping omitted ones", async () => {
    const { chain } = chainOf([plugin("clamp", () => value({ delaySeconds: 60 }), { hooks: ["notifyScheduled"] })]);
    const result = await chain.run("notifyScheduled", { sessionId: "s", message: "wake up", delaySeconds: 9_999 });
    expect(result).toMatchObject({ kind: "passed", context: { message: "wake up", delaySeconds: 60 } });
  });

  it("treats an empty object as no change and an unknown field as malformed", async () => {
    const { chain, decisions } = chainOf([
      plugin("empty", () => value({}), { hooks: ["notifyScheduled"] }),
      plugin("typo", () => value({ delay: 1 }), { hooks: ["notifyScheduled"] }),
    ]);
    const result = await chain.run("notifyScheduled", { sessionId: "s", message: "m", delaySeconds: 5 });
    expect(result.context).toEqual({ sessionId: "s", message: "m", delaySeconds: 5 });
    expect(decisions.map((d) => d.outcome)).toEqual(["passed", "skipped"]);
    expect(decisions[1]!.reason).toMatch(/"delay" is not a field notifyScheduled can change/);
  });

  it("ignores the return value of an observe-only hook", async () => {
    const { chain, decisions } = chainOf([plugin("obs", () => value("whatever"), { hooks: ["cronJobCompleted"] })]);
    const context = { cronJobId: "1", cronJobRunId: "2", sessionId: "s", agentId: "a", status: "Succeeded" };
    expect(await chain.run("cronJobCompleted", context)).toMatchObject({ kind: "passed", context });
    expect(decisions[0]).toMatchObject({ outcome: "passed", subjectId: "2" });
  });

  it("does not start handlers past the chain deadline, and fails closed for a required one", async () => {
    let t = 0;
    const slow = plugin("slow", (ctx) => {
      t += 800; // this handler takes 800 ms of the injected clock
      return value(`${ctx.prompt as string}+slow`);
    });
    const late = plugin("late", appending("+late"));
    const chain = new PluginChain({
      plugins: [slow, late],
      handlerTimeoutMs: 5_000,
      chainDeadlineMs: 500,
      log: createLogger("silent"),
      now: () => t,
    });
    expect(await chain.run("cronJobFiring", firing)).toMatchObject({
      kind: "passed",
      context: { prompt: "check+slow" },
    });
    expect(late.calls).toHaveLength(0);

    const gate = plugin("gate", appending("+gate"), { required: true });
    const closing = new PluginChain({
      plugins: [slow, gate],
      handlerTimeoutMs: 5_000,
      chainDeadlineMs: 500,
      log: createLogger("silent"),
      now: () => t,
    });
    const result = await closing.run("cronJobFiring", firing);
    expect(result).toMatchObject({ kind: "cancelled", plugin: "gate" });
    expect(result.kind === "cancelled" && result.reason).toBe(
      "required plugin gate failed (chain deadline passed); failing closed",
    );
  });

  it("gives each handler at most what is left of the chain deadline as its timeout", async () => {
    const budgets: number[] = [];
    const spy: ChainPlugin = {
      name: "spy",
      required: false,
      shadow: false,
      hooks: new Set(["cronJobFiring"]),
      invoke: async (_h, ctx, timeoutMs) => (budgets.push(timeoutMs), value(ctx.prompt)),
    };
    const chain = new PluginChain({
      plugins: [spy],
      handlerTimeoutMs: 5_000,
      chainDeadlineMs: 1_200,
      log: createLogger("silent"),
      now: () => 0,
    });
    await chain.run("cronJobFiring", firing);
    expect(budgets).toEqual([1_200]);
  });

  it("passes the session a hook fired for, and the hop count, with each invocation", async () => {
    const metas: unknown[] = [];
    const spy: ChainPlugin = {
      name: "spy",
      required: false,
      shadow: false,
      hooks: new Set(["interAgentMessage", "cronJobFiring", "sshCommandSending"]),
      invoke: async (_h, ctx, _t, meta) => (metas.push(meta), value(ctx.text ?? ctx.prompt ?? {})),
    };
    const { chain } = chainOf([spy]);
    await chain.run(
      "interAgentMessage",
      { senderSessionId: "sender", senderAgentId: "a", targetSessionId: "target", isSubagentReport: false, text: "hi" },
      { hop: 3 },
    );
    await chain.run("cronJobFiring", firing);
    await chain.run("sshCommandSending", {
      sessionId: "s1",
      agentId: "a2",
      sshHostId: "h1",
      hostDisplayName: "web",
      kind: "command",
      command: "ls",
      path: null,
      content: null,
    });
    // The sender's session and agent for interAgentMessage; the server only on SSH hooks.
    expect(metas).toEqual([
      { sessionId: "sender", hop: 3, agentId: "a", sshHostId: null },
      { sessionId: null, hop: 0, agentId: "a1", sshHostId: null },
      { sessionId: "s1", hop: 0, agentId: "a2", sshHostId: "h1" },
    ]);
  });
});
