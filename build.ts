// Builds the daemon into dist/: src/main.ts and everything it imports bundled by esbuild into one
// dist/main.js, which the package runs (bin/missiond.js when installed, the systemd unit). One file
// instead of hundreds of modules: no type stripping at start, and a few hundred module records and
// their compiled code fewer (an idle daemon on Postgres: 153 → 115 MB resident, 1.8 → 0.6 s of CPU
// to ready, measured with bench/memory.ts). Packages that ship native code or load files next to
// their own modules (the PGlite database, pino's transport worker) stay in node_modules.
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL(".", import.meta.url));
export const DIST_MAIN = join(root, "dist", "main.js");

export const EXTERNAL = [
  "isolated-vm",
  "koffi",
  "ssh2",
  "cpu-features",
  "@electric-sql/pglite",
  "pino",
  "pino-pretty",
  "thread-stream",
];

export async function buildDaemon(): Promise<{ bytes: number }> {
  const { build } = await import("esbuild");
  rmSync(join(root, "dist"), { recursive: true, force: true });
  mkdirSync(join(root, "dist"), { recursive: true });
  const result = await build({
    entryPoints: [join(root, "src", "main.ts")],
    outfile: DIST_MAIN,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    external: EXTERNAL,
    // Names stay as written (errors, logs); only whitespace and syntax are shortened.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: "none",
    metafile: true,
    logLevel: "warning",
    // Bundled CommonJS packages call require(); an ES module has none of its own.
    banner: {
      js: "import { createRequire as __missiondRequire } from 'node:module'; const require = __missiondRequire(import.meta.url);",
    },
  });
  // The Python plugins' host process runs this script (src/plugins/python/process.ts finds it).
  copyFileSync(join(root, "src", "plugins", "python", "host.py"), join(root, "dist", "host.py"));
  return { bytes: Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0) };
}

if (import.meta.main) {
  const { bytes } = await buildDaemon();
  console.log(`daemon built into ${DIST_MAIN} (${(bytes / 1024 / 1024).toFixed(1)} MiB)`);
}
