import { createRequire } from "node:module";
import type ivmModule from "isolated-vm";
import { describe, expect, it } from "vitest";
import { bootstrapCached, runBootstrap } from "../../src/plugins/sandbox/compiled-bootstrap.ts";
import { isolateSetup } from "../../src/plugins/sandbox/setup.ts";

const ivm = createRequire(import.meta.url)("isolated-vm") as typeof ivmModule;

/** A fresh isolate with the bootstrap run in it, as a plugin's load runs it: the globals it made. */
async function boot(): Promise<string> {
  const isolate = new ivm.Isolate({ memoryLimit: 32 });
  try {
    const context = await isolate.createContext();
    await context.global.set("__rpc", new ivm.Reference(() => undefined));
    await context.global.set(
      "__setup",
      isolateSetup("p", { simple: new Set(), fetch: null, fs: [], env: [] }, {}, {}, []),
    );
    await runBootstrap(isolate, context, 2_000);
    const names = ["__invoke", "host", "structuredClone", "URL", "TextEncoder", "crypto", "setTimeout"];
    return (await context.eval(`JSON.stringify(${JSON.stringify(names)}.map((n) => typeof globalThis[n]))`)) as string;
  } finally {
    isolate.dispose();
  }
}

describe("the bootstrap's code cache", () => {
  it("is made by the first isolate and taken by the next, which then runs the same bootstrap", async () => {
    const first = await boot();
    expect(bootstrapCached()).toBe(true);
    const second = await boot();
    expect(bootstrapCached()).toBe(true);
    expect(JSON.parse(first)).toEqual(["function", "object", "function", "function", "function", "object", "function"]);
    expect(second).toEqual(first);
  });
});
