import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readShellConfig, shlexSplit } from "../../src/plugins/dialects/shell-config.ts";
import { shellAnswer, shellHandle, shellPayload } from "../../src/plugins/dialects/shell-hooks.ts";
import { nativeWritesMissing, prerequisite } from "../helpers/prerequisite.ts";

/** A plugin folder with this config.yaml and an executable agent-hooks/hook.sh printing `script`'s output. */
const made: string[] = [];
afterAll(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function folder(yaml: string, script = "cat >/dev/null\n"): string {
  const dir = mkdtempSync(join(tmpdir(), "shell-hooks-"));
  made.push(dir);
  mkdirSync(join(dir, "agent-hooks"));
  writeFileSync(join(dir, "config.yaml"), yaml);
  writeFileSync(join(dir, "agent-hooks", "hook.sh"), `#!/usr/bin/env bash\n${script}`);
  chmodSync(join(dir, "agent-hooks", "hook.sh"), 0o755);
  return dir;
}

const entry = (lines: string) => `hooks:\n  pre_tool_call:\n    - command: "~/.mibyan/agent-hooks/hook.sh"\n${lines}`;

describe("shell hooks: config.yaml", () => {
  it("splits a command as shlex.split does", () => {
    expect(shlexSplit(`python3 "a \\"b\\" c" d\\ e 'x  y' z`)).toEqual(["python3", 'a "b" c', "d e", "x  y", "z"]);
    expect(shlexSplit("a''b \"\"")).toEqual(["ab", ""]);
    expect(() => shlexSplit("echo 'open")).toThrow("No closing quotation");
  });

  it("resolves ~/.mibyan/ against the folder, defaults the timeout to 60 s and caps it at 300 s", () => {
    const dir = folder(
      `${entry("      timeout: 900\n")}  post_tool_call:\n    - command: "./agent-hooks/hook.sh --x ~/.mibyan/y"\n`,
    );
    const { hooks, autoAccept } = readShellConfig(dir);
    expect(autoAccept).toBe(false);
    expect(hooks.map((h) => [h.event, h.argv, h.timeoutMs, h.failClosed])).toEqual([
      ["pre_tool_call", [join(dir, "agent-hooks/hook.sh")], 300_000, false],
      ["post_tool_call", [join(dir, "agent-hooks/hook.sh"), "--x", join(dir, "y")], 60_000, false],
    ]);
  });

  it("takes fail_closed or failClosed on pre_tool_call only, and matchers on tool events only", () => {
    const dir = folder(
      `${entry('      matcher: "terminal|patch"\n      failClosed: true\n')}  pre_llm_call:\n` +
        `    - matcher: "x"\n      command: "~/.mibyan/agent-hooks/hook.sh"\n      fail_closed: true\n`,
    );
    const [tool, llm] = readShellConfig(dir).hooks;
    expect(tool!.failClosed).toBe(true);
    expect(["terminal", "patch", "apply_patch"].map((n) => tool!.matcher!.test(n))).toEqual([true, true, false]);
    expect([llm!.failClosed, llm!.matcher]).toEqual([false, null]);
  });

  it("names the file and the line of each problem", () => {
    const cases: [string, RegExp][] = [
      [entry('      matcher: "("\n'), /config\.yaml line 4: hooks\.pre_tool_call\.0\.matcher: matcher: /],
      [entry("      timeout: soon\n"), /config\.yaml line 4: hooks\.pre_tool_call\.0\.timeout: timeout is a number/],
      [
        entry("      fail_closed: yes please\n"),
        /line 4: hooks\.pre_tool_call\.0\.fail_closed: fail_closed is true or false/,
      ],
      ['hooks:\n  pre_tool_call:\n    - command: "~/.mibyan/nope.sh"\n', /line 3: .*command not found: .*nope\.sh/],
      ["hooks:\n  pre_tool_call:\n    - matcher: x\n", /line 3: hooks\.pre_tool_call\.0\.command: command is required/],
      [
        "hooks:\n  pre_tool_call:\n  on_tool_call:\n    - command: x\n",
        /line 3: hooks\.on_tool_call: unknown hook name/,
      ],
      ["model: x\n", /config\.yaml: hooks: no hooks: block/],
    ];
    for (const [yaml, message] of cases) expect(() => readShellConfig(folder(yaml))).toThrow(message);
  });
});

describe("shell hooks: payload and answers", () => {
  it("builds the page's payload, the call's other fields under extra", () => {
    const fields = {
      tool_name: "terminal",
      args: { command: "ls" },
      session_id: "s1",
      task_id: "t1",
      tool_call_id: "c1",
    };
    expect(shellPayload("pre_tool_call", fields)).toEqual({
      hook_event_name: "pre_tool_call",
      tool_name: "terminal",
      tool_input: { command: "ls" },
      session_id: "s1",
      cwd: null,
      profile: "default",
      extra: { task_id: "t1", tool_call_id: "c1" },
    });
  });

  it("reads both block and modify shapes, approve by action only, context for pre_llm_call, no-op otherwise", () => {
    expect(shellAnswer("pre_tool_call", { decision: "block", reason: "no" })).toEqual({
      action: "block",
      message: "no",
    });
    expect(shellAnswer("pre_tool_call", { action: "block", message: "no" })).toEqual({
      action: "block",
      message: "no",
    });
    expect(shellAnswer("pre_tool_call", { decision: "approve" })).toBeNull();
    expect(shellAnswer("pre_tool_call", { action: "approve", message: "ask" })).toEqual({
      action: "approve",
      message: "ask",
    });
    expect(shellAnswer("pre_llm_call", { context: "Today" })).toEqual({ context: "Today" });
    expect(shellAnswer("pre_llm_call", { note: "x" })).toBeNull();
    expect(shellAnswer("pre_verify", { decision: "block", reason: "fmt" })).toEqual({
      decision: "block",
      reason: "fmt",
    });
    expect(shellAnswer("post_tool_call", { action: "block" })).toBeNull();
    expect(shellAnswer("pre_tool_call", "text")).toBeNull();
  });

  // The hook runs from the test's own folder, which a root daemon's `nobody` children cannot enter.
  const noReach = prerequisite(nativeWritesMissing());
  it.skipIf(noReach !== null)(
    `fails open on a timeout without fail_closed, and a non-JSON answer is malformed${noReach ? ` (skipped: ${noReach})` : ""}`,
    async () => {
      const run = async (yaml: string, script: string) => {
        const dir = folder(yaml, script);
        const handle = shellHandle("p", dir, readShellConfig(dir), {});
        return handle.call("0", { kwargs: { tool_name: "terminal" } }, 5_000, { sessionId: null, hop: 0 });
      };
      expect(await run(entry("      timeout: 0.2\n"), "exec sleep 5\n")).toEqual({ outcome: "timeout" });
      expect(await run(entry(""), "echo not json\n")).toEqual({
        outcome: "malformed",
        message: "stdout is not JSON: not json",
      });
      expect(await run(entry("      fail_closed: true\n"), "exit 1\n")).toEqual({
        outcome: "value",
        value: { action: "block", message: "~/.mibyan/agent-hooks/hook.sh: exited with code 1 (fail_closed)" },
      });
      expect(await run(entry(""), 'echo "$MISSIOND_HOOK $MISSIOND_PLUGIN $(pwd)" >&2; exit 2\n')).toMatchObject({
        outcome: "value",
        value: { action: "block", message: expect.stringMatching(/^pre_tool_call p \/.*shell-hooks-/) },
      });
    },
  );
});
