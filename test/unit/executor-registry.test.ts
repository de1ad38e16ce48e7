import { describe, expect, it } from "vitest";
import type { AgentService } from "../../src/executors/agents.ts";
import type { AgentConfig } from "../../src/executors/agent-config.ts";
import { executorRegistry } from "../../src/executors/registry.ts";
import { createLogger } from "../../src/log.ts";

/** An agent service whose one agent can be changed, counting the reads of its settings. */
function agentsStub() {
  const state = { reads: 0, version: "1", url: "http://127.0.0.1:1/a" };
  const service = {
    resolve(id: string) {
      state.reads++;
      if (id !== "a") return Promise.resolve(null);
      const config = { executor: "webhook", url: state.url, secret: null, timeoutMs: 1000 } as unknown as AgentConfig;
      return Promise.resolve({ config, version: state.version });
    },
  } as unknown as AgentService;
  return { state, service };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe("executorRegistry", () => {
  it("reads an agent's settings once for the missions of one turn", async () => {
    const { state, service } = agentsStub();
    const executorFor = executorRegistry(service, createLogger("silent"), () => Date.now());
    const executors = await Promise.all(Array.from({ length: 20 }, () => executorFor("a")));
    expect(state.reads).toBe(1);
    expect(new Set(executors).size).toBe(1);
    expect(executors[0]!.name).toBe("webhook");
  });

  it("reads again on a later turn, so a changed agent applies to the next missions", async () => {
    const { state, service } = agentsStub();
    const executorFor = executorRegistry(service, createLogger("silent"), () => Date.now());
    const first = await executorFor("a");
    await nextTurn();
    expect(await executorFor("a")).toBe(first); // same version: the built executor is kept
    state.version = "2";
    await nextTurn();
    const changed = await executorFor("a");
    expect(state.reads).toBe(3);
    expect(changed).not.toBe(first);
  });

  it("gives agents nobody configured the log executor, each agent read on its own", async () => {
    const { state, service } = agentsStub();
    const executorFor = executorRegistry(service, createLogger("silent"), () => Date.now());
    const [a, b] = await Promise.all([executorFor("a"), executorFor("b")]);
    expect(state.reads).toBe(2);
    expect(a.name).toBe("webhook");
    expect(b.name).toBe("log");
  });
});
