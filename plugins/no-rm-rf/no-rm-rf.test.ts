import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Plugins } from "../../src/plugins/service.ts";
import { examplePlugin, loadTestPlugins } from "../../test/helpers/plugins.ts";

const sending = (patch: Record<string, unknown>) => ({
  sessionId: "s1",
  agentId: "a1",
  sshHostId: "h1",
  hostDisplayName: "web-1",
  kind: "command",
  command: null,
  path: null,
  content: null,
  ...patch,
});

describe("no-rm-rf", () => {
  let plugins: Plugins;
  beforeAll(async () => {
    ({ plugins } = await loadTestPlugins([examplePlugin("no-rm-rf")]));
  });
  afterAll(() => plugins.stop());

  for (const command of ["rm -rf /", "sudo rm -rf / ", "rm -fr /", "rm -r /"]) {
    it(`refuses "${command}"`, async () => {
      expect(await plugins.chain.run("sshCommandSending", sending({ command }))).toMatchObject({
        kind: "cancelled",
        plugin: "no-rm-rf",
        reason: "refusing to delete the root filesystem",
      });
    });
  }

  it("lets rm -rf of a subdirectory through unchanged", async () => {
    const result = await plugins.chain.run("sshCommandSending", sending({ command: "rm -rf /tmp/build" }));
    expect(result).toMatchObject({ kind: "passed", context: { command: "rm -rf /tmp/build" }, changedBy: [] });
  });

  it("forces apt-get install -y", async () => {
    const result = await plugins.chain.run("sshCommandSending", sending({ command: "apt-get install ripgrep" }));
    expect(result).toMatchObject({
      kind: "passed",
      context: { command: "apt-get install -y ripgrep" },
      changedBy: ["no-rm-rf"],
    });
  });

  it("returns {} (no change) for file operations", async () => {
    const context = sending({ kind: "write_file", path: "/etc/motd", content: "hi" });
    expect(await plugins.chain.run("sshCommandSending", context)).toMatchObject({
      kind: "passed",
      context,
      changedBy: [],
    });
  });
});
