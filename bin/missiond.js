#!/usr/bin/env node
// npm's bin shim cannot point at a .ts file on every Node, so this forwards to src/main.ts with
// the Node that runs the project (24, from the node@24 dev dependency, or the system's if new enough).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pinned = join(root, "node_modules", "node", "bin", "node");
const node = existsSync(pinned) ? pinned : process.execPath;
// Own process group: a signal sent to the shim's group (Ctrl-C, `timeout`, systemd) reaches the
// daemon once, through the forwarding below, not twice (a second SIGTERM means "force").
// V8 grows its young generation to 128 MB while the daemon loads its modules and keeps it however
// idle the daemon is afterwards; capped at 4 MB a semi-space, an idle daemon holds about 110 MB less.
const flags = ["--max-semi-space-size=4"];
// Node caches the stripped TypeScript and its bytecode here: a start after the first neither
// loads the TypeScript stripper (about 30 MB resident) nor compiles the sources again.
const env = { NODE_COMPILE_CACHE: join(tmpdir(), "missiond-compile-cache"), ...process.env };
const child = spawn(node, [...flags, join(root, "src", "main.ts"), ...process.argv.slice(2)], {
  stdio: "inherit",
  detached: true,
  env,
});
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => {
  if (signal) process.kill(process.pid, signal);
  else process.exit(code ?? 1);
});
