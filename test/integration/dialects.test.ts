import { nativeWritesMissing, prerequisite, pythonMissing } from "../helpers/prerequisite.ts";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import type { Decision } from "../../src/plugins/chain.ts";
import { serveDialectHook, serveIntercept, serveObserve } from "../../src/plugins/dialects/serve.ts";
import { Plugins } from "../../src/plugins/service.ts";
import { tempDir } from "../helpers/tmp.ts";

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/dialects/${name}`, import.meta.url));
const FIXTURES = [
  "content-filter",
  "shell-gate",
  "my-hook",
  "command-logger",
  "guardrails",
  "tool-policy",
  "py-faults",
  "bad-yaml",
];

const noPython = prerequisite(pythonMissing());
// The event hooks write into the test's folders.
const noWrites = prerequisite(nativeWritesMissing());
const skipped = noPython ? ` (skipped: ${noPython})` : "";

describe("plugins written for the other hook systems", () => {
  let plugins: Plugins;
  const decisions: Decision[] = [];
  const home = tempDir("home");
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  };

  beforeAll(async () => {
    mkdirSync(join(home, ".mibyan", "hooks", "my-hook"), { recursive: true });
    plugins = await Plugins.start({
      dirs: FIXTURES.map(fixture),
      handlerTimeoutMs: 2_000,
      memoryLimitMb: 64,
      log: createLogger("silent"),
      now: () => Date.now(),
      env: { HOME: home },
      onDecision: (d) => decisions.push(d),
    });
  }, 30_000);
  afterAll(() => plugins.stop());

  it.skipIf(noPython !== null)(
    `loads every fixture but the malformed HOOK.yaml, which is named with its line${skipped}`,
    () => {
      const list = plugins.list();
      const bad = list.find((p) => p.state === "failed")!;
      expect(bad.error).toMatch(/bad-yaml\/HOOK\.yaml line \d+/);
      expect(list.filter((p) => p.state === "active").map((p) => [p.name, p.dialect])).toEqual(
        expect.arrayContaining([
          ["content-filter", "gateway"],
          ["shell-gate", "extension"],
          ["my-hook", "event-hook"],
          ["command-logger", "event-hook"],
          ["guardrails", "python"],
        ]),
      );
    },
  );

  it("gateway: the content filter blocks a prompt and the response filter masks SSNs", async () => {
    const d = plugins.dialects;
    const blocked = await serveDialectHook(d, "prePrompt", { message: "please DROP TABLE users", sessionKey: "s1" });
    expect(blocked).toMatchObject({ block: true, reason: 'Blocked: contains "DROP TABLE"', plugin: "content-filter" });
    expect(await serveDialectHook(d, "prePrompt", { message: "hello", sessionKey: "s1" })).toMatchObject({
      message: "hello",
      block: false,
    });
    const masked = await serveDialectHook(d, "postResponse", { response: "SSN 123-45-6789.", sessionKey: "s1" });
    expect(masked).toMatchObject({ response: "SSN ***-**-****.", block: false, changedBy: ["content-filter"] });
    expect(await serveDialectHook(d, "preToolExec", { toolName: "ls", agentName: "a", args: [] })).toEqual({
      allow: true,
    });
    expect(decisions).toContainEqual(
      expect.objectContaining({ plugin: "content-filter", hook: "prePrompt", outcome: "cancelled", subjectId: "s1" }),
    );
    expect(decisions).toContainEqual(
      expect.objectContaining({ plugin: "content-filter", hook: "postResponse", outcome: "changed", subjectId: "s1" }),
    );
  });

  it("extensions: the rm -rf / gate blocks, tool.result redacts, retry stops at 3, title prefixes", async () => {
    const d = plugins.dialects;
    expect(
      await serveIntercept(d, "tool.call", {
        input: { name: "shell", input: { command: "rm -rf /" } },
        current: "allow",
      }),
    ).toEqual({
      result: { block: "Refused: rm -rf /." },
      endedBy: "shell-gate",
    });
    // 'ask' (hand the call to the user) does not end the chain: a later gate still sees it.
    expect(
      await serveIntercept(d, "tool.call", {
        input: { name: "shell", input: { command: "git push origin main --force" } },
        current: "allow",
      }),
    ).toEqual({ result: "ask", endedBy: null });
    // match: the gate ignores other tools.
    expect(
      (
        await serveIntercept(d, "tool.call", {
          input: { name: "edit", input: { command: "rm -rf /" } },
          current: "allow",
        })
      ).result,
    ).toBe("allow");
    const redacted = await serveIntercept(d, "tool.result", {
      input: { name: "shell", isError: false },
      current: { result: "API_KEY=abc123 ok", isError: false },
    });
    expect(redacted.result).toEqual({
      result: "API_KEY=<redacted> ok",
      isError: false,
      metadata: { "my-ext": { redacted: true } },
    });
    expect(
      (await serveIntercept(d, "retry", { input: { attempt: 2 }, current: { retry: true, delayMs: 500 } })).result,
    ).toEqual({ retry: true, delayMs: 2000 });
    expect(
      (await serveIntercept(d, "retry", { input: { attempt: 3 }, current: { retry: true, delayMs: 500 } })).result,
    ).toEqual({ retry: false });
    expect((await serveIntercept(d, "title", { input: {}, current: "Deploy" })).result).toBe("Kitchen: Deploy");
    expect((await serveIntercept(d, "title", { input: {}, current: undefined })).result).toBeUndefined();
    const gate = decisions.filter((x) => x.plugin === "shell-gate").map((x) => [x.hook, x.outcome]);
    for (const hook of ["tool.call", "tool.result", "retry", "title"]) expect(gate).toContainEqual([hook, "changed"]);
  });

  it("extensions: an async tracing.redact handler is skipped as an error; the synchronous one still runs", async () => {
    const key = "sk-" + "a".repeat(24);
    const out = await serveIntercept(plugins.dialects, "tracing.redact", {
      input: { kind: "prompt" },
      current: `key ${key}`,
    });
    expect(out.result).toBe("key sk-<redacted>");
    expect(decisions).toContainEqual(
      expect.objectContaining({
        plugin: "shell-gate",
        hook: "tracing.redact",
        outcome: "skipped",
        reason: expect.stringMatching(/promise/),
      }),
    );
  });

  it("extensions: observers are answered at once; a throw and a write to the read-only event are errors", async () => {
    expect(serveObserve(plugins.dialects, "fault:throw", {})).toEqual({ extensions: 1 });
    serveObserve(plugins.dialects, "fault:write", { name: "x" });
    await until(() => decisions.filter((d) => d.hook.startsWith("fault:")).length >= 2);
    const faults = decisions.filter((d) => d.hook.startsWith("fault:"));
    expect(faults.map((d) => [d.hook, d.outcome])).toEqual(
      expect.arrayContaining([
        ["fault:throw", "skipped"],
        ["fault:write", "skipped"],
      ]),
    );
    expect(faults.find((d) => d.hook === "fault:write")!.reason).toMatch(/read[- ]only|Cannot assign/i);
  });

  it.skipIf(noWrites !== null)(
    `event hooks: the activity log and the command logger write what they should${noWrites ? ` (skipped: ${noWrites})` : ""}`,
    async () => {
      const d = plugins.dialects;
      expect(await serveDialectHook(d, "agent:step", { iteration: 2, session_id: "s9" })).toEqual({
        event: "agent:step",
        handledBy: ["my-hook"],
      });
      const activity = readFileSync(join(home, ".mibyan", "hooks", "my-hook", "activity.log"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(activity.at(-1)).toMatchObject({ event: "agent:step", iteration: 2, session_id: "s9" });
      expect(decisions).toContainEqual(
        expect.objectContaining({ plugin: "my-hook", hook: "agent:step", outcome: "passed", subjectId: "s9" }),
      );
      await serveDialectHook(d, "command:reset", { command: "reset", args: "", platform: "cli", user_id: "u1" });
      const commands = readFileSync(join(home, ".mibyan", "logs", "command_usage.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(commands.at(-1)).toMatchObject({ command: "reset", args: "", platform: "cli", user: "u1" });
      expect(decisions).toContainEqual(
        expect.objectContaining({ plugin: "command-logger", hook: "command:reset", outcome: "passed" }),
      );
    },
  );

  it.skipIf(noPython !== null)(
    `python plugins: pre_tool_call blocks and modifies, pre_llm_call injects context${skipped}`,
    async () => {
      const d = plugins.dialects;
      expect(
        await serveDialectHook(d, "pre_tool_call", {
          tool_name: "terminal",
          args: { command: "rm -rf /tmp/x" },
          task_id: "t1",
        }),
      ).toEqual({
        action: "block",
        message: "Reason the tool call was blocked",
        plugin: "tool-policy",
      });
      expect(
        await serveDialectHook(d, "pre_tool_call", { tool_name: "patch", args: { new_string: "x" }, task_id: "t1" }),
      ).toMatchObject({
        action: "allow",
        args: { new_string: "fixed content" },
        changedBy: ["tool-policy"],
      });
      const llm = await serveDialectHook(d, "pre_llm_call", {
        session_id: "s1",
        user_message: "hi",
        is_first_turn: true,
      });
      expect((llm!.value as Record<string, unknown>).context).toBe(
        "Never execute commands that delete files without explicit user confirmation.",
      );
      expect(decisions).toContainEqual(
        expect.objectContaining({ plugin: "guardrails", hook: "pre_llm_call", outcome: "changed" }),
      );
    },
  );

  it.skipIf(noPython !== null)(
    `python faults: a raise is skipped, a hang is killed at the time limit, an exit is a crash; each restarts${skipped}`,
    async () => {
      const d = plugins.dialects;
      await serveDialectHook(d, "fault_raise", {});
      await serveDialectHook(d, "fault_hang", {});
      await new Promise((r) => setTimeout(r, 1_100)); // the restart back-off
      await serveDialectHook(d, "fault_exit", {});
      const reasons = decisions.filter((x) => x.plugin === "py-faults").map((x) => [x.hook, x.outcome, x.reason]);
      expect(reasons).toEqual([
        ["fault_raise", "skipped", "threw: ValueError: handler failed"],
        ["fault_hang", "skipped", "timeout"],
        ["fault_exit", "skipped", expect.stringMatching(/crashed: exited with code 3/)],
      ]);
      await new Promise((r) => setTimeout(r, 1_100));
      await serveDialectHook(d, "fault_raise", {});
      expect(decisions.filter((x) => x.plugin === "py-faults").at(-1)!.reason).toBe(
        "threw: ValueError: handler failed",
      );
      expect(plugins.list().find((p) => p.name === "py-faults")!.restarts).toBe(2);
    },
    20_000,
  );
});

describe("an extension's error budget", () => {
  it("suspends its observers and interceptors after the configured number of errors, with a log line", async () => {
    const lines: { msg: string; plugin?: string; errors?: number }[] = [];
    const plugins = await Plugins.start({
      dirs: [fixture("shell-gate")],
      handlerTimeoutMs: 2_000,
      extensionErrorBudget: 2,
      memoryLimitMb: 64,
      log: createLogger("warn", { write: (line: string) => void lines.push(JSON.parse(line)) }),
      now: () => Date.now(),
    });
    try {
      const d = plugins.dialects;
      serveObserve(d, "fault:throw", {});
      serveObserve(d, "fault:throw", {});
      await d.drain();
      expect(plugins.list()[0]).toMatchObject({ name: "shell-gate", state: "suspended", errors: 2 });
      expect(lines.filter((l) => /suspended/.test(l.msg))).toEqual([
        expect.objectContaining({
          plugin: "shell-gate",
          errors: 2,
          msg: "extension shell-gate suspended: 2 errors spent its error budget (last: threw: observer failed); its observers and interceptors run again after a reload",
        }),
      ]);
      expect(serveObserve(d, "fault:throw", {})).toEqual({ extensions: 0 });
      expect((await serveIntercept(d, "title", { input: {}, current: "Deploy" })).result).toBe("Deploy");
    } finally {
      await plugins.stop();
    }
  });
});

describe("the order of the other hook systems' chains", () => {
  let plugins: Plugins;
  const decisions: Decision[] = [];

  beforeAll(async () => {
    plugins = await Plugins.start({
      dirs: ["chain-order-b", "chain-order-a", "gateway-order-a", "gateway-order-b"].map(fixture),
      handlerTimeoutMs: 2_000,
      memoryLimitMb: 64,
      log: createLogger("silent"),
      now: () => Date.now(),
      onDecision: (d) => decisions.push(d),
    });
  }, 30_000);
  afterAll(() => plugins.stop());

  it("an intercept chain: extension load order, then priority (higher first), then registration order; a disposed handler is gone", async () => {
    expect(await serveIntercept(plugins.dialects, "chain.order", { input: {}, current: [] })).toEqual({
      result: ["a:high", "a:first", "a:second", "b:top"],
      endedBy: null,
    });
    expect(plugins.list().find((p) => p.name === "chain-order-a")!.hooks).toEqual(["chain.order", "chain.readonly"]);
  });

  it("an interceptor's input and current are read-only views: a write throws a TypeError and the handler is skipped", async () => {
    const before = decisions.length;
    expect(
      await serveIntercept(plugins.dialects, "chain.readonly", { input: { name: "shell" }, current: ["start"] }),
    ).toEqual({ result: ["start", "TypeError", "TypeError", "TypeError"], endedBy: null });
    expect(decisions.slice(before).map((d) => [d.plugin, d.outcome, d.reason])).toEqual([
      ["chain-order-a", "skipped", "threw: Cannot assign to read only property 'name' of object '#<Object>'"],
      ["chain-order-a", "skipped", "threw: Cannot add property 1, object is not extensible"],
      ["chain-order-a", "changed", null],
    ]);
  });

  it("gateway hooks run in configuration order (plugin.json order, then name), and a block stops the rest", async () => {
    expect(await serveDialectHook(plugins.dialects, "prePrompt", { message: "hi", sessionKey: "s1" })).toEqual({
      message: "hi +b +a",
      block: false,
      changedBy: ["gateway-order-b", "gateway-order-a"],
    });
    const before = decisions.length;
    expect(await serveDialectHook(plugins.dialects, "prePrompt", { message: "stop here", sessionKey: "s2" })).toEqual({
      message: "",
      block: true,
      reason: "stopped by a",
      plugin: "gateway-order-a",
      changedBy: ["gateway-order-b"],
    });
    expect(decisions.slice(before).map((d) => [d.plugin, d.outcome])).toEqual([
      ["gateway-order-b", "changed"],
      ["gateway-order-a", "cancelled"],
    ]);
  });
});

describe.skipIf(noPython !== null)(`a Python plugin's memory limit${skipped}`, () => {
  it("an allocation past the address-space limit fails in the callback (MemoryError, skipped); the host goes on", async () => {
    const decisions: Decision[] = [];
    const plugins = await Plugins.start({
      dirs: [fixture("py-memory")],
      handlerTimeoutMs: 5_000,
      memoryLimitMb: 256,
      log: createLogger("silent"),
      now: () => Date.now(),
      onDecision: (d) => decisions.push(d),
    });
    try {
      await serveDialectHook(plugins.dialects, "fault_memory", {});
      await serveDialectHook(plugins.dialects, "fault_small", {});
      expect(decisions.map((d) => [d.hook, d.outcome, d.reason])).toEqual([
        ["fault_memory", "skipped", "threw: MemoryError: "],
        ["fault_small", "passed", null],
      ]);
      expect(plugins.list()[0]).toMatchObject({ name: "py-memory", restarts: 0 });
    } finally {
      await plugins.stop();
    }
  });
});
