import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkGrants, describeMissing } from "../../src/plugins/grant-check.ts";
import { readManifest } from "../../src/plugins/manifest.ts";
import { tempDir } from "../helpers/tmp.ts";

/** A plugin folder with these files (plugin.json from `permissions`), read as a load reads it. */
function folder(files: Record<string, string>, permissions: unknown = ["log"]) {
  const dir = join(tempDir("grant-check"), "probe");
  for (const [path, text] of Object.entries({ "plugin.json": JSON.stringify({ permissions }), ...files })) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return readManifest(dir);
}
const missing = (code: string, permissions?: unknown, more: Record<string, string> = {}) =>
  checkGrants(folder({ "index.js": code, ...more }, permissions)).missing.map(describeMissing);

describe("the grant check of a plugin's code", () => {
  it.each([
    ["a call through host", "await host.fs.read('/x');", "host.fs is used (index.js:1)"],
    ["a member read into a name", "const fs = host.fs;", "host.fs is used (index.js:1)"],
    ["destructuring host", "const { store } = host;\nawait store.get('k');", "host.store is used (index.js:1)"],
    ["destructuring with a new name", "const { fetch: get } = host;", "host.fetch is used (index.js:1)"],
    ["an alias of host", "const h = host;\nawait h.agents.list();", "host.agents is used (index.js:2)"],
    ["globalThis.host", "await globalThis.host.llm.complete({});", "host.llm is used (index.js:1)"],
    ["ctx.host", "export const run = (ctx) => ctx.host.session.info();", "host.session is used (index.js:1)"],
    ["a string key", 'await host["fs"].read("/x");', "host.fs is used (index.js:1)"],
    ["host.decide (the llm grant)", "await host.decide({ question: 'q', options: [] });", "host.decide is used"],
  ])("finds %s", (_, code, expected) => {
    const [problem] = missing(code);
    expect(problem).toContain(expected);
  });

  it("names the manifest key to add", () => {
    expect(
      missing("globalThis.middleware.cronJobFiring = async (c) => { await host.fs.read('/a'); return c.prompt; };"),
    ).toEqual(['host.fs is used (index.js:1) but not granted: add "fs" to permissions in plugin.json']);
    expect(missing("await host.decide({});")[0]).toMatch(/add "llm" to permissions/);
  });

  it("reads the files the entry imports, TypeScript included", () => {
    const found = missing('import { save } from "./lib/save.ts";\n', ["log"], {
      "lib/save.ts":
        "export const save = async (key: string): Promise<void> => {\n  await host.store.set(key, 1);\n};\n",
    });
    expect(found).toEqual([
      'host.store is used (lib/save.ts:2) but not granted: add "store" to permissions in plugin.json',
    ]);
  });

  it("lets through what is granted, config (every plugin's), and members tested for presence", () => {
    expect(missing("await host.store.get('k'); host.log('info', 'x');", ["log", "store"])).toEqual([]);
    expect(missing("await host.fetch('https://a.example');", { fetch: ["a.example"] })).toEqual([]);
    expect(missing("const limit = host.config.limit;")).toEqual([]);
    for (const code of [
      "await host.fs?.read('/x');",
      "if (!host.session) return;\nawait host.session.info();",
      "if (host.workspace) await host.workspace.write('a', 'b');",
      "const kind = typeof host.llm;",
      "if ('fetch' in host) await host.fetch('https://a.example');",
      "const ok = host.agents !== undefined && (await host.agents.list());",
      "const { ssh = null } = host;",
    ])
      expect(missing(code), code).toEqual([]);
  });

  it("reports what it cannot read as nothing: the load reports the syntax error", () => {
    expect(missing("this is not javascript (")).toEqual([]);
  });

  it("finds nothing in the contract's own examples", () => {
    const check = checkGrants(
      folder(
        {
          "index.js":
            "globalThis.middleware.systemPrompt = async (context) => {\n" +
            "  const { agents } = await host.agents!.list();\n".replace("!", "") +
            "  return agents.length ? context.systemPrompt : context.systemPrompt + 'x';\n};\n",
        },
        ["log", "agents"],
      ),
    );
    expect(check).toEqual({ missing: [], checked: [] });
  });
});
