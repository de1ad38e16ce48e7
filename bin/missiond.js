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
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

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
if (Number(process.versions.node.split(".")[0]) === pinned.major) {
  // In this process: no child, so signals, exit codes and systemd's main PID are the daemon's own.
  await import(pathToFileURL(entry).href);
} else if (pinned.binary) {
  // Own process group: a signal sent to the launcher's group (Ctrl-C, `timeout`) reaches the
  // daemon once, through the forwarding below, not twice (a second SIGTERM means "force").
  const child = spawn(pinned.binary, [entry, ...process.argv.slice(2)], { stdio: "inherit", detached: true });
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
} else {
  process.stderr.write(
    `missiond: needs Node ${pinned.major}; this is ${process.version}, and the bundled Node ${pinned.major} ` +
      `(the "node" package) was not installed (was npm run with --ignore-scripts?)\n`,
  );
  process.exit(1);
}
