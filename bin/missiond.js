#!/usr/bin/env node
// npm's bin shim cannot point at a .ts file on every Node, so this forwards to src/main.ts with
// the Node that runs the project (24, from the node@24 dev dependency, or the system's if new enough).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pinned = join(root, "node_modules", "node", "bin", "node");
const node = existsSync(pinned) ? pinned : process.execPath;
// Own process group: a signal sent to the shim's group (Ctrl-C, `timeout`, systemd) reaches the
// daemon once, through the forwarding below, not twice (a second SIGTERM means "force").
const child = spawn(node, [join(root, "src", "main.ts"), ...process.argv.slice(2)], {
  stdio: "inherit",
  detached: true,
});
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => {
  if (signal) process.kill(process.pid, signal);
  else process.exit(code ?? 1);
});
