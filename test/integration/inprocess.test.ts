import { describe, expect, it } from "vitest";
import { loadInProcess } from "../../src/plugins/inprocess.ts";
import { examplePlugin } from "../helpers/plugins.ts";

// The in-process runner is the benchmark's baseline; it must run the same plugins the same way.
describe("in-process plugin runner", () => {
  it("runs the contract's cron-sentinel in a context of its own", async () => {
    // What this realm holds as `middleware` before (test files share their worker's realm): the
    // plugin's hooks must land in its own context, leaving this one as it was.
    const realm = globalThis as unknown as { middleware?: Record<string, unknown> };
    const before = { value: realm.middleware, keys: Object.keys(realm.middleware ?? {}) };
    const logged: string[] = [];
    const plugin = loadInProcess(`${examplePlugin("cron-sentinel")}/index.js`, {
      log: (_level: string, message: string) => logged.push(message),
    });
    expect(plugin.hooks).toEqual(["cronJobFiring", "cronJobCompleted"]);
    const context = { cronJobId: "1", agentId: "a", kind: "cron_job", name: "n", prompt: "HOLD it" };
    expect(await plugin.invoke("cronJobFiring", context, 1_000)).toEqual({
      outcome: "cancel",
      reason: "[cron-sentinel] refused: prompt carries HOLD",
    });
    expect(logged).toEqual(['[cron-sentinel] firing cron_job "n" (cronJob 1)']);
    expect(realm.middleware).toBe(before.value);
    expect(Object.keys(realm.middleware ?? {})).toEqual(before.keys);
  });
});
