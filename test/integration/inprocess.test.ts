import { describe, expect, it } from "vitest";
import { loadInProcess } from "../../src/plugins/inprocess.ts";
import { examplePlugin } from "../helpers/plugins.ts";

// The in-process runner is the benchmark's baseline; it must run the same plugins the same way.
describe("in-process plugin runner", () => {
  it("runs the contract's cron-sentinel in a context of its own", async () => {
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
    expect("middleware" in globalThis).toBe(false);
  });
});
