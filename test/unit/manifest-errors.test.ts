import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readManifest } from "../../src/plugins/manifest.ts";
import { tempDir } from "../helpers/tmp.ts";

/** readManifest's message for a folder with index.js and this plugin.json, after its prefix. */
function problem(manifest: unknown): string {
  const dir = join(tempDir("manifest-errors"), "probe");
  mkdirSync(dir);
  writeFileSync(join(dir, "plugin.json"), JSON.stringify(manifest));
  writeFileSync(join(dir, "index.js"), "");
  try {
    readManifest(dir);
  } catch (err) {
    return (err as Error).message.replace(`plugin "probe" (${dir}): invalid plugin.json: `, "");
  }
  throw new Error("the manifest was accepted");
}

describe("plugin.json errors name the entry and the fix", () => {
  it.each([
    [
      { permissions: ["fetch"] },
      'permissions: "fetch" in the list form needs its hosts: use { "fetch": ["api.example.com"] }',
    ],
    [
      { permissions: ["log", "fs"] },
      'permissions: "fs" in the list form needs its paths: use { "fs": [{ "path": "data", "access": "read" }] }',
    ],
    [
      { permissions: ["env"] },
      'permissions: "env" in the list form needs its variable names: use { "env": ["TOKEN"] }',
    ],
    [{ permissions: ["stor"] }, 'permissions: unknown permission "stor" (did you mean "store"?)'],
    [{ permissions: ["network"] }, 'permissions: unknown permission "network"'],
    [{ permissions: [3] }, "permissions.0: must be a permission name (a string)"],
    [
      { permissions: "log" },
      'permissions: a list (["log", "store"]) or an object ({ "log": true, "fetch": ["api.example.com"] })',
    ],
    [{ permissions: { fetch: true } }, "permissions.fetch: must be a list"],
    [{ permissions: { stroe: true } }, 'permissions: unknown key "stroe" (did you mean "store"?)'],
    [
      { permissions: { fetch: ["bad host/"] } },
      'permissions.fetch.0: "bad host/" is not a host name with an optional port, e.g. "api.example.com" or "127.0.0.1:8080"',
    ],
    [{ permissions: { fs: [{ path: "data" }] } }, 'permissions.fs.0.access: missing: one of "read", "read-write"'],
    [
      { permissions: { fs: [{ path: "data", access: "rw" }] } },
      'permissions.fs.0.access: "rw" is not allowed: one of "read", "read-write"',
    ],
    [
      { permissions: { fs: [{ path: "d", acess: "read" }] } },
      'permissions.fs.0.access: missing: one of "read", "read-write"; permissions.fs.0: unknown key "acess" (did you mean "access"?)',
    ],
    [
      { permissions: { llm: { max_call_per_hour: 5 } } },
      'permissions.llm: unknown key "max_call_per_hour" (did you mean "max_calls_per_hour"?)',
    ],
    [{ requierd: true }, 'unknown key "requierd" (did you mean "required"?)'],
    [{ colour: "red" }, 'unknown key "colour"'],
    [{ required: "yes" }, "required: must be true or false"],
    [{ order: "5" }, "order: must be a number"],
    [{ order: 1.5 }, "order: must be a whole number"],
    [{ order: 2_000_000 }, "order: at most 1000000"],
    [{ version: "" }, "version: must not be empty"],
    [{ description: "x".repeat(501) }, "description: at most 500 characters"],
    [
      { name: "Bad Name" },
      `name: "Bad Name" is not a plugin name: lowercase letters, digits, '.', '_' or '-', at most 64 characters`,
    ],
    [{ commands: { cronJobFiring: { argv: [] } } }, "commands.cronJobFiring.argv: must not be empty"],
    [
      { commands: { cronJobFiring: { argv: ["x"], timout: "2s" } } },
      'commands.cronJobFiring: unknown key "timout" (did you mean "timeout"?)',
    ],
  ])("%j → %s", (manifest, expected) => {
    expect(problem(manifest)).toBe(expected);
  });

  it("lists every problem, each on its own", () => {
    expect(problem({ requierd: true, permissions: ["fetch", "stor"] }).split("; ")).toEqual([
      'permissions: "fetch" in the list form needs its hosts: use { "fetch": ["api.example.com"] }',
      'permissions: unknown permission "stor" (did you mean "store"?)',
      'unknown key "requierd" (did you mean "required"?)',
    ]);
  });
});
