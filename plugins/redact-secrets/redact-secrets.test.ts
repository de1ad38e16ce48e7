import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Plugins } from "../../src/plugins/service.ts";
import { examplePlugin, loadTestPlugins } from "../../test/helpers/plugins.ts";

const completed = (output: string | null, errorOutput: string | null) => ({
  sessionId: "s1",
  agentId: "a1",
  sshHostId: "h1",
  hostDisplayName: "web-1",
  kind: "command",
  command: "env",
  path: null,
  exitCode: 0,
  output,
  errorOutput,
  isTruncated: false,
  durationMs: 12,
});

describe("redact-secrets", () => {
  let plugins: Plugins;
  beforeAll(async () => {
    ({ plugins } = await loadTestPlugins([examplePlugin("redact-secrets")]));
  });
  afterAll(() => plugins.stop());

  it("redacts AWS key ids from command output and error output", async () => {
    const result = await plugins.chain.run(
      "sshCommandCompleted",
      completed("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nok", "warn: AKIAABCDEFGHIJKLMNOP leaked"),
    );
    expect(result.context).toMatchObject({
      output: "AWS_ACCESS_KEY_ID=[redacted AWS key]\nok",
      errorOutput: "warn: [redacted AWS key] leaked",
    });
  });

  it("keeps a null output null (undefined from the handler means the field is omitted)", async () => {
    const result = await plugins.chain.run("sshCommandCompleted", completed("AKIAIOSFODNN7EXAMPLE", null));
    expect(result.context).toMatchObject({ output: "[redacted AWS key]", errorOutput: null });
  });

  it("redacts secrets from replies before they reach a person", async () => {
    const text =
      "Use ghp_abcdefghijklmnopqrstuvwxyz0123456789 and sk-live_abcdefghijklmnopqrstu, key AKIAIOSFODNN7EXAMPLE";
    const result = await plugins.chain.run("assistantMessageOutbound", { sessionId: "s1", channelId: null, text });
    expect(result.context.text).toBe("Use [redacted GitHub token] and [redacted API key], key [redacted AWS key]");
  });

  it("passes a reply without secrets unchanged", async () => {
    const result = await plugins.chain.run("assistantMessageOutbound", {
      sessionId: "s1",
      channelId: "c1",
      text: "All good.",
    });
    expect(result).toMatchObject({ kind: "passed", changedBy: [] });
  });
});
