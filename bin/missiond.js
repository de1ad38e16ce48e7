#!/usr/bin/env node
// The `missiond` command. It runs src/main.ts in a checkout (Node strips the types) and the
// compiled dist/main.js in an installed package (Node refuses to strip types under node_modules),
// on Node 24: the Node running this file when its major version is the pinned runtime's (the
// `node` dependency, whose ABI isolated-vm's prebuilt binaries are built for), otherwise the
// pinned runtime itself. The same major, not "at least": a newer Node has a newer ABI, for which
// the native dependencies may ship nothing.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { MALLOC_ENV, NODE_FLAGS } from "./launch.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const source = join(root, "src", "main.ts");
const entry = existsSync(source) ? source : join(root, "dist", "main.js");

/** The pinned runtime: its major version and its binary (null if its install step did not run). */
function pinnedNode() {
  const manifest = createRequire(import.meta.url).resolve("node/package.json");
  const major = Number(JSON.parse(readFileSync(manifest, "utf8")).version.split(".")[0]);
  const binary = join(dirname(manifest), "bin", "node");
  return { major, binary: existsSync(binary) ? binary : null };
}

const pinned = pinnedNode();
const node = Number(process.versions.node.split(".")[0]) === pinned.major ? process.execPath : pinned.binary;
if (!node) {
  process.stderr.write(
    `missiond: needs Node ${pinned.major}; this is ${process.version}, and the bundled Node ${pinned.major} ` +
      `(the "node" package) was not installed (was npm run with --ignore-scripts?)\n`,
  );
  process.exit(1);
}
// A child process, because these are launch flags and an environment read as the process starts
// (launch.js says why each).
const flags = NODE_FLAGS;
// Node caches compiled code here: a start after the first neither loads the TypeScript stripper
// (about 30 MB resident, in a checkout) nor compiles the sources again.
const env = { NODE_COMPILE_CACHE: join(tmpdir(), "missiond-compile-cache"), ...MALLOC_ENV, ...process.env };
// Own process group: a signal sent to the launcher's group (Ctrl-C, `timeout`) reaches the
// daemon once, through the forwarding below, not twice (a second SIGTERM means "force").
const child = spawn(node, [...flags, entry, ...process.argv.slice(2)], { stdio: "inherit", detached: true, env });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => {
  if (signal) process.kill(process.pid, signal);
  else process.exit(code ?? 1);
});
