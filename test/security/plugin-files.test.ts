/**
 * host.fs and host.workspace against files that attack the daemon rather than the path check:
 * FIFOs and devices that would hold its thread, and folders swapped for symlinks while a read is
 * under way. Unit-level through fsCall / workspaceCall, and once through a plugin's isolate.
 */
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import type { Grants } from "../../src/plugins/grants.ts";
import { fsCall } from "../../src/plugins/host-fs.ts";
import { workspaceCall } from "../../src/plugins/host-workspace.ts";
import { Plugins } from "../../src/plugins/service.ts";
import { tempDir } from "../helpers/tmp.ts";

const SECRET = "OUTSIDE-SECRET";
const grantsOf = (...fs: Grants["fs"]): Grants => ({ simple: new Set(), fetch: null, fs, env: [] });

/** What a call gave: its value, or the message it was refused with. */
const outcome = async (call: () => Promise<unknown>): Promise<{ ok?: unknown; error?: string }> => {
  try {
    return { ok: await call() };
  } catch (err) {
    return { error: (err as Error).message };
  }
};

/** Runs a call while a 10 ms interval runs on the same thread; the interval must tick meanwhile. */
async function whileTicking(call: () => Promise<unknown>) {
  let ticks = 0;
  const interval = setInterval(() => ticks++, 10);
  try {
    const [result] = await Promise.all([outcome(call), new Promise((resolve) => setTimeout(resolve, 30))]);
    return { result, ticks };
  } finally {
    clearInterval(interval);
  }
}

/**
 * A separate process that swaps `path` between what it is and `swapIn` (a prepared symlink),
 * with atomic renames, as fast as it can for `ms`, and leaves the original in place.
 */
function swapper(path: string, swapIn: string, ms: number): Promise<number> {
  const script = `
    const fs = require("node:fs");
    const [path, swapIn, ms] = process.argv.slice(1);
    const end = Date.now() + Number(ms);
    let swaps = 0;
    // A write may make the folder again in the moment it is away, even again between moving
    // it aside and the rename: each one made is moved aside under a name of its own.
    let made = 0;
    const put = (from, to) => {
      for (let attempt = 0; ; attempt++) {
        try {
          fs.renameSync(from, to);
          return;
        } catch (err) {
          if (attempt === 100) throw err;
          try {
            fs.renameSync(to, to + ".made-" + made++);
          } catch {}
        }
      }
    };
    while (Date.now() < end) {
      fs.renameSync(path, path + ".real");
      put(swapIn, path);
      fs.renameSync(path, swapIn);
      put(path + ".real", path);
      swaps++;
    }
    process.stdout.write(String(swaps));
  `;
  const child = spawn(process.execPath, ["-e", script, path, swapIn, String(ms)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.on("exit", (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`swapper exited ${code}`)))),
  );
}

/** Repeats `call`, `parallel` at a time, until `done` settles; what each gave. */
async function hammer(done: Promise<unknown>, parallel: number, call: () => Promise<unknown>) {
  let finished = false;
  void done.finally(() => (finished = true));
  const results: { ok?: unknown; error?: string }[] = [];
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (!finished) results.push(await outcome(call));
    }),
  );
  await done;
  return results;
}

let base: string;
let granted: string;
let outside: string;
const fs = (grants: Grants, method: string, ...args: unknown[]) => outcome(() => fsCall(grants, method, args));
const ws = (method: string, ...args: unknown[]) =>
  outcome(() => workspaceCall(method, args, "a1", async () => granted));

beforeAll(() => {
  base = realpathSync(tempDir("plugin-files"));
  granted = join(base, "granted");
  outside = join(base, "outside");
  // The swaps replace `sub`, a folder above the file read: O_NOFOLLOW alone would not see them.
  mkdirSync(join(granted, "sub", "inner"), { recursive: true });
  mkdirSync(join(outside, "inner"), { recursive: true });
  writeFileSync(join(granted, "sub", "inner", "file.txt"), "inside");
  writeFileSync(join(outside, "file.txt"), SECRET);
  writeFileSync(join(outside, "inner", "file.txt"), SECRET);
  writeFileSync(join(outside, "inner", "only-outside.txt"), SECRET);
  execFileSync("mkfifo", [join(granted, "pipe")]);
  symlinkSync(join(outside, "file.txt"), join(granted, "link-out"));
  symlinkSync("/proc/self/environ", join(granted, "proc-link"));
  symlinkSync("/dev/zero", join(granted, "zero-link"));
  symlinkSync(join(granted, "sub", "inner", "file.txt"), join(granted, "link-in"));
});

describe("host.fs and host.workspace never hold the daemon's thread", () => {
  const rw = () => grantsOf({ path: granted, access: "read-write" });

  it("refuses to read or write a FIFO at once, while a timer on the same thread keeps ticking", async () => {
    const pipe = join(granted, "pipe");
    const calls = [
      () => fsCall(rw(), "fs.read", [pipe]),
      () => fsCall(rw(), "fs.write", [pipe, "x"]),
      () => workspaceCall("workspace.read", ["pipe"], "a1", async () => granted),
      () => workspaceCall("workspace.write", ["pipe", "x"], "a1", async () => granted),
    ];
    for (const call of calls) {
      const { result, ticks } = await whileTicking(call);
      expect(result.error).toMatch(/refused (\/.*\/)?pipe: a FIFO, not a regular file/);
      expect(ticks).toBeGreaterThan(0);
    }
  });

  it("refuses a FIFO with a reader at its other end too, and writes nothing into it", async () => {
    const pipe = join(granted, "pipe");
    const reader = spawn("cat", [pipe], { stdio: ["ignore", "pipe", "ignore"] });
    let got = "";
    reader.stdout.on("data", (chunk: Buffer) => (got += chunk.toString()));
    try {
      expect((await fs(rw(), "fs.write", pipe, "planted")).error).toMatch(/refused .*pipe: a FIFO/);
      expect((await ws("workspace.write", "pipe", "planted")).error).toMatch(/refused pipe: a FIFO/);
    } finally {
      // Opening the FIFO for writing once lets cat see its end and exit.
      execFileSync("sh", ["-c", `: > '${pipe}'`]);
      await new Promise((resolve) => reader.on("exit", resolve));
    }
    expect(got).toBe("");
  });

  it("refuses device files as not regular instead of reading /dev/zero for ever", async () => {
    const zero = grantsOf({ path: "/dev/zero", access: "read" });
    const devices = grantsOf({ path: "/dev", access: "read-write" });
    const { result, ticks } = await whileTicking(() => fsCall(zero, "fs.read", ["/dev/zero"]));
    expect(result.error).toBe("host.fs refused /dev/zero: a character device, not a regular file or folder");
    expect(ticks).toBeGreaterThan(0);
    expect((await fs(devices, "fs.write", "/dev/null", "x")).error).toBe(
      "host.fs refused /dev/null: a character device, not a regular file or folder",
    );
  });

  it("refuses symlinks out, /proc and devices reached through the workspace, naming the path", async () => {
    const reads = await Promise.all([
      fs(rw(), "fs.read", join(granted, "link-out")),
      fs(rw(), "fs.read", "/proc/self/environ"),
      fs(rw(), "fs.read", join(granted, "proc-link")),
      fs(rw(), "fs.read", join(granted, "zero-link")),
      fs(rw(), "fs.write", join(granted, "link-in"), "x"),
      ws("workspace.read", "link-out"),
      ws("workspace.read", "proc-link"),
      ws("workspace.read", "zero-link"),
      ws("workspace.stat", "zero-link"),
    ]);
    expect(reads.map((r) => r.error)).toEqual([
      `host.fs refused ${granted}/link-out: not inside a path the plugin may read`,
      "host.fs refused /proc/self/environ: not inside a path the plugin may read",
      `host.fs refused ${granted}/proc-link: not inside a path the plugin may read`,
      `host.fs refused ${granted}/zero-link: not inside a path the plugin may read`,
      `host.fs refused ${granted}/link-in: a symlink`,
      "host.workspace refused link-out: it leads out of the workspace",
      "host.workspace refused proc-link: it leads out of the workspace",
      "host.workspace refused zero-link: it leads out of the workspace",
      "host.workspace refused zero-link: it leads out of the workspace",
    ]);
  });
});

describe("a folder or file swapped for a symlink while plugins read it", () => {
  const readOnly = () => grantsOf({ path: granted, access: "read" });

  it("never gives out the outside file through a swapped folder, however often it is read", async () => {
    const swapIn = join(base, "sub-swap");
    symlinkSync(outside, swapIn);
    const sub = join(granted, "sub");
    const done = swapper(sub, swapIn, 1_500);
    const results = await hammer(done, 4, async () => {
      const [viaFs, viaWorkspace, listed] = await Promise.all([
        fsCall(readOnly(), "fs.read", [join(sub, "inner", "file.txt")]).catch((e: Error) => e.message),
        workspaceCall("workspace.read", ["sub/inner/file.txt"], "a1", async () => granted).catch(
          (e: Error) => e.message,
        ),
        fsCall(readOnly(), "fs.list", [join(sub, "inner")]).catch((e: Error) => e.message),
      ]);
      return [viaFs, viaWorkspace, JSON.stringify(listed)].join(" | ");
    });
    expect(await done).toBeGreaterThan(0);
    expect(results.length).toBeGreaterThan(100);
    const leaked = results.filter((r) => String(r.ok).includes(SECRET) || String(r.ok).includes("only-outside"));
    expect(leaked).toEqual([]);
    expect(results.some((r) => String(r.ok).startsWith("inside"))).toBe(true);
  });

  it("never writes outside through a swapped folder, and never truncates the outside file", async () => {
    const swapIn = join(base, "sub-swap-w");
    symlinkSync(outside, swapIn);
    const sub = join(granted, "sub");
    const done = swapper(sub, swapIn, 1_000);
    const results = await hammer(done, 4, async () => {
      const grants = grantsOf({ path: granted, access: "read-write" });
      await fsCall(grants, "fs.write", [join(sub, "inner", "file.txt"), "inside"]);
      await fsCall(grants, "fs.write", [join(sub, "inner", "new.txt"), "new"]);
      await workspaceCall("workspace.write", ["sub/inner/deeper/made.txt", "made"], "a1", async () => granted);
    });
    expect(results.length).toBeGreaterThan(50);
    expect(readFileSync(join(outside, "inner", "file.txt"), "utf8")).toBe(SECRET);
    expect(readdirSync(join(outside, "inner")).sort()).toEqual(["file.txt", "only-outside.txt"]);
    expect(readdirSync(outside).sort()).toEqual(["file.txt", "inner"]);
  });

  it("never gives out the outside file through a swapped file", async () => {
    const swapIn = join(base, "file-swap");
    symlinkSync(join(outside, "file.txt"), swapIn);
    const file = join(granted, "sub", "inner", "file.txt");
    const done = swapper(file, swapIn, 1_000);
    const results = await hammer(done, 4, () =>
      Promise.all([
        fsCall(readOnly(), "fs.read", [file]),
        workspaceCall("workspace.read", ["sub/inner/file.txt"], "a1", async () => granted),
      ]).catch((e: Error) => e.message),
    );
    expect(results.length).toBeGreaterThan(100);
    expect(results.filter((r) => JSON.stringify(r).includes(SECRET))).toEqual([]);
  });
});

describe("ordinary files still work", () => {
  it("reads, writes (emptying what was longer) and lists through host.fs", async () => {
    const grants = grantsOf({ path: granted, access: "read-write" });
    const note = join(granted, "note.txt");
    expect(await fs(grants, "fs.write", note, "a much longer first text")).toEqual({ ok: undefined });
    expect(await fs(grants, "fs.write", note, "short")).toEqual({ ok: undefined });
    expect(await fs(grants, "fs.read", note)).toEqual({ ok: "short" });
    expect(await fs(grants, "fs.read", join(granted, "link-in"))).toEqual({ ok: "inside" });
    expect((await fs(grants, "fs.list", granted)).ok).toEqual(expect.arrayContaining(["note.txt", "sub", "pipe"]));
    expect((await fs(grants, "fs.read", join(granted, "nothing.txt"))).error).toBe(
      `host.fs: ${granted}/nothing.txt does not exist`,
    );
    expect((await fs(grants, "fs.read", join(granted, "sub"))).error).toBe(
      `host.fs.read: ${granted}/sub is a folder, not a file`,
    );
  });

  it("writes and reads a granted single file, whose folder is not granted", async () => {
    const single = join(base, "single.txt");
    writeFileSync(single, "one");
    const grants = grantsOf({ path: single, access: "read-write" });
    expect(await fs(grants, "fs.write", single, "two")).toEqual({ ok: undefined });
    expect(await fs(grants, "fs.read", single)).toEqual({ ok: "two" });
    expect((await fs(grants, "fs.write", join(base, "beside.txt"), "x")).error).toMatch(/not inside a path/);
  });

  it("reads a file up to the limit and refuses a larger one without reading it all", async () => {
    const grants = grantsOf({ path: granted, access: "read" });
    writeFileSync(join(granted, "big.txt"), "x".repeat(1_000_000));
    writeFileSync(join(granted, "bigger.txt"), "x".repeat(1_000_001));
    writeFileSync(join(granted, "huge.txt"), Buffer.alloc(5_000_000, 0x78));
    expect(((await fs(grants, "fs.read", join(granted, "big.txt"))).ok as string).length).toBe(1_000_000);
    for (const name of ["bigger.txt", "huge.txt"])
      expect((await fs(grants, "fs.read", join(granted, name))).error).toBe(
        `host.fs.read: ${granted}/${name} is more than 1000000 characters`,
      );
  });

  it("writes, reads, lists and stats in a workspace, creating folders on the way", async () => {
    expect(await ws("workspace.write", "made/on/the/way.md", "# hi")).toEqual({ ok: undefined });
    expect(await ws("workspace.read", "made/on/the/way.md")).toEqual({ ok: "# hi" });
    expect(await ws("workspace.list", "made/on")).toEqual({ ok: ["the"] });
    expect((await ws("workspace.stat", "made/on/the/way.md")).ok).toMatchObject({ type: "file", size: 4 });
    expect((await ws("workspace.stat", "pipe")).ok).toMatchObject({ type: "other" });
    expect(await ws("workspace.stat", "nothing")).toEqual({ ok: null });
    expect((await ws("workspace.list")).ok).toEqual(expect.arrayContaining(["made", "sub"]));
  });
});

describe("through a plugin's isolate", () => {
  let plugins: Plugins;
  beforeAll(async () => {
    const dir = tempDir("files-probe");
    writeFileSync(
      join(dir, "plugin.json"),
      JSON.stringify({
        name: "files-probe",
        permissions: { log: true, workspace: true, fs: [{ path: granted, access: "read" }] },
      }),
    );
    // Runs `times` reads of each path (host.fs if absolute, else host.workspace) and answers
    // with every distinct outcome.
    writeFileSync(
      join(dir, "index.js"),
      `globalThis.middleware.systemPrompt = async (context) => {
        const { paths, times } = JSON.parse(context.systemPrompt);
        const seen = new Set();
        for (let i = 0; i < times; i++)
          for (const path of paths) {
            const read = path.startsWith("/") ? host.fs.read(path) : host.workspace.read(path);
            seen.add(await read.then(String, (e) => "error: " + e.message));
          }
        return JSON.stringify([...seen].sort());
      };`,
    );
    plugins = await Plugins.start({
      dirs: [dir],
      handlerTimeoutMs: 10_000,
      breaker: { failures: 0, cooldownMs: 0 },
      memoryLimitMb: 64,
      log: createLogger("silent"),
      now: () => Date.now(),
      agentExtras: async (id) => ({ workspace: id === "a1" ? granted : null, ssh: null }),
    });
  });
  afterAll(async () => plugins.stop());

  const ask = async (paths: string[], times: number) => {
    const prompt = JSON.stringify({ paths, times });
    const result = await plugins.chain.run("systemPrompt", {
      sessionId: "s1",
      agentId: "a1",
      sessionKind: "direct",
      systemPrompt: prompt,
    });
    return JSON.parse(String(result.context.systemPrompt)) as string[];
  };

  it("gets a refusal for a FIFO, not a stuck handler", async () => {
    expect(await ask([join(granted, "pipe"), "pipe"], 1)).toEqual([
      `error: host.fs refused ${granted}/pipe: a FIFO, not a regular file or folder`,
      "error: host.workspace refused pipe: a FIFO, not a regular file or folder",
    ]);
  });

  it("reads a swapped folder hundreds of times and never gets the outside file", async () => {
    const swapIn = join(base, "sub-swap-isolate");
    symlinkSync(outside, swapIn);
    const done = swapper(join(granted, "sub"), swapIn, 1_500);
    const seen = await ask([join(granted, "sub", "inner", "file.txt"), "sub/inner/file.txt"], 300);
    await done;
    expect(seen.filter((s) => s.includes(SECRET))).toEqual([]);
    expect(seen).toContain("inside");
  });
});
