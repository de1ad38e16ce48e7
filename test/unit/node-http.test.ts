import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

/** Runs `code` in a fresh Node (type stripping on) and answers its stdout. */
function inFreshNode(code: string): string {
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(run.stderr);
  return run.stdout.trim();
}

describe("node-http.ts", () => {
  it("loads node:https only when one of its exports is first read", () => {
    const url = new URL("../../src/node-http.ts", import.meta.url).href;
    const out = inFreshNode(`
      const loaded = () => process.moduleLoadList.includes("NativeModule https");
      const { https } = await import(${JSON.stringify(url)});
      const before = loaded();
      const request = typeof https.request;
      console.log(JSON.stringify({ before, request, after: loaded() }));
    `);
    expect(JSON.parse(out)).toEqual({ before: false, request: "function", after: true });
  });
});
