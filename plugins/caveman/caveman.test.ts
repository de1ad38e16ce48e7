import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Plugins } from "../../src/plugins/service.ts";
import { examplePlugin, loadTestPlugins } from "../../test/helpers/plugins.ts";

describe("caveman", () => {
  let plugins: Plugins;
  beforeAll(async () => {
    ({ plugins } = await loadTestPlugins([examplePlugin("caveman")]));
  });
  afterAll(() => plugins.stop());

  it("loads from TypeScript and registers systemPrompt", () => {
    expect(plugins.list()).toMatchObject([{ name: "caveman", hooks: ["systemPrompt"], state: "active" }]);
  });

  it("appends its guidance to every system prompt", async () => {
    const result = await plugins.chain.run("systemPrompt", {
      sessionId: "s1",
      agentId: "a1",
      sessionKind: "direct",
      systemPrompt: "You are helpful.",
    });
    expect(result.kind).toBe("passed");
    expect(result.context.systemPrompt).toMatch(/^You are helpful\.\n\nAnswer like caveman\. Few words\./);
  });
});
