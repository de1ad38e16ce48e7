// Builds the daemon into dist/: src/main.ts and everything it imports bundled by esbuild into
// dist/main.js and the chunks it imports (dist/chunks/), which the package runs (bin/missiond.js
// when installed, the systemd unit). A few files instead of hundreds of modules: no type stripping
// at start, and a few hundred module records and their compiled code fewer (an idle daemon on
// Postgres: 153 → 115 MB resident, 1.8 → 0.6 s of CPU to ready, measured with bench/memory.ts).
// Packages that ship native code or load files next to their own modules (the PGlite database,
// pino's transport worker) stay in node_modules.
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { Metafile, Plugin } from "esbuild";

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

/**
 * fastify requires node:http2 as its server module loads, to serve HTTP/2 when asked (missiond never
 * asks): about 45 ms of CPU in a start on two cores. Its require gets a stand-in that loads
 * node:http2 the first time one of its exports is read.
 */
const lazyHttp2ForFastify: Plugin = {
  name: "lazy-http2-for-fastify",
  setup(build) {
    build.onResolve({ filter: /^(node:)?http2$/ }, (args) =>
      args.importer.includes(`${sep}node_modules${sep}fastify${sep}`)
        ? { path: "http2", namespace: "lazy-builtin" }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "lazy-builtin" }, () => ({
      contents: `let loaded; module.exports = new Proxy({}, { get: (_, key) => (loaded ??= require("node:http2"))[key] });`,
      loader: "js",
    }));
  },
};

/** Builds into dist/ (or `outDir`, emptied first); the metafile maps what each output imports. */
export async function buildDaemon(outDir = join(root, "dist")): Promise<{ bytes: number; metafile: Metafile }> {
  const { build } = await import("esbuild");
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const result = await build({
    entryPoints: [join(root, "src", "main.ts")],
    outdir: outDir,
    entryNames: "[name]",
    // What src/ imports dynamically (the embedded database and its drizzle driver, the migrators,
    // the sd_notify socket) goes in chunks of its own, loaded when first imported: a daemon on a
    // server never loads PGlite.
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
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
    plugins: [lazyHttp2ForFastify],
    // Bundled CommonJS packages call require(); an ES module has none of its own.
    banner: {
      js: "import { createRequire as __missiondRequire } from 'node:module'; const require = __missiondRequire(import.meta.url);",
    },
  });
  // The Python plugins' host process runs this script (src/plugins/python/process.ts finds it).
  copyFileSync(join(root, "src", "plugins", "python", "host.py"), join(outDir, "host.py"));
  const { metafile } = result;
  return { bytes: Object.values(metafile.outputs).reduce((sum, o) => sum + o.bytes, 0), metafile };
}

if (import.meta.main) {
  const { bytes } = await buildDaemon();
  console.log(`daemon built into ${DIST_MAIN} (${(bytes / 1024 / 1024).toFixed(1)} MiB)`);
}
