/**
 * The daemon as the package ships it (build.ts: src/main.ts bundled into one file and its chunks),
 * built once per run for the processes the tests start: `missiond serve`, the CLI, the docs'
 * commands. Run from src/ each such process stripped the types of and compiled some hundreds of
 * modules again, about three times the CPU of the bundle's start (0.6 against 0.2 s for
 * `missiond --version`), and the suite starts several hundred. Tests that load the daemon in their
 * own worker still import src/.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildDaemon } from "../../build.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Names what the bundle is made from: every file of src/, build.ts and the lockfile. */
function sourcesKey(): string {
  const hash = createHash("sha256");
  const files = readdirSync(join(ROOT, "src"), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  for (const file of [...files, join(ROOT, "build.ts"), join(ROOT, "package-lock.json")])
    hash.update(file.slice(ROOT.length)).update("\0").update(readFileSync(file));
  return hash.digest("hex").slice(0, 16);
}

/**
 * The bundle's main.js for the sources as they are now, built if it is not there yet. It is built
 * under a name of its own and renamed into place (a folder below the checkout, so that it finds the
 * package's files and node_modules as dist/ does), so two runs building it at once each see a whole one.
 */
export async function builtDaemon(): Promise<string> {
  const dir = join(ROOT, "node_modules", ".cache", "missiond-test-dist", sourcesKey());
  const main = join(dir, "main.js");
  if (existsSync(main)) return main;
  const building = `${dir}.${process.pid}`;
  await buildDaemon(building);
  try {
    renameSync(building, dir);
  } catch (err) {
    rmSync(building, { recursive: true, force: true });
    if (!existsSync(main)) throw err;
  }
  return main;
}
