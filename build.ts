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
  // fastify requires its default schema compilers only when none are given, and the API gives its
  // own (src/api/app.ts, ZOD_COMPILERS): left out, the serve chunk is 0.37 MB smaller (ajv, its
  // formats, fast-json-stringify's compiler), source an idle daemon would hold all its life.
  "@fastify/ajv-compiler",
  "@fastify/fast-json-stringify-compiler",
  // fastify.inject()'s, required the first time it is called: the tests call it, the daemon never.
  "light-my-request",
];

/**
 * Built-in modules that packages require as they load, for what missiond never asks of them:
 * fastify's server module node:http2 and node:https (HTTP/2, TLS; about 45 ms of CPU in a start on
 * two cores for node:http2), prom-client's push gateway client node:https (with src/node-http.ts's,
 * about 1 MB resident in an idle daemon: 102.4 against 103.0 MB, bench/memory.ts, median of 3).
 * Each such require gets a stand-in that loads the module the first time one of its exports is read.
 */
const LAZY_BUILTINS: { importer: string; modules: string[] }[] = [
  { importer: `${sep}node_modules${sep}fastify${sep}`, modules: ["http2", "https"] },
  { importer: `${sep}node_modules${sep}prom-client${sep}`, modules: ["https"] },
];

const lazyBuiltins: Plugin = {
  name: "lazy-builtins",
  setup(build) {
    build.onResolve({ filter: /^(node:)?(http2|https)$/ }, (args) => {
      const name = args.path.replace(/^node:/, "");
      const lazy = LAZY_BUILTINS.some((l) => args.importer.includes(l.importer) && l.modules.includes(name));
      return lazy ? { path: name, namespace: "lazy-builtin" } : undefined;
    });
    build.onLoad({ filter: /.*/, namespace: "lazy-builtin" }, (args) => ({
      contents: `let loaded; module.exports = new Proxy({}, { get: (_, key) => (loaded ??= require("node:${args.path}"))[key] });`,
      loader: "js",
    }));
  },
};

/**
 * Packages that others import as they load for what missiond never asks of them: pg-boss's parsers
 * for its own schedules (cron expressions, RRULEs), which missiond turns off (src/db/boss.ts:
 * `schedule: false`; cron-parser, luxon, rrule-temporal), and the dashboard file server's glob, for
 * a root listed up front (src/api/ui.ts serves it as requested): 0.45 MB of source an idle daemon
 * would hold, and their modules' first run. Each gets a stand-in with the exports its importer
 * uses, which loads the package from node_modules the first time one is called.
 */
export const LAZY_PACKAGES: Record<string, { importer: string; standIn: string }> = {
  "cron-parser": {
    importer: `${sep}node_modules${sep}pg-boss${sep}`,
    standIn: `module.exports = { CronExpressionParser: { parse: (...args) => require("cron-parser").CronExpressionParser.parse(...args) } };`,
  },
  "rrule-temporal": {
    importer: `${sep}node_modules${sep}pg-boss${sep}`,
    standIn: `module.exports = { RRuleTemporal: function RRuleTemporal(options) { return new (require("rrule-temporal").RRuleTemporal)(options); } };`,
  },
  glob: {
    importer: `${sep}node_modules${sep}@fastify${sep}static${sep}`,
    standIn: `module.exports = { glob: (...args) => require("glob").glob(...args) };`,
  },
};

const lazyPackages: Plugin = {
  name: "lazy-packages",
  setup(build) {
    const names = Object.keys(LAZY_PACKAGES);
    build.onResolve({ filter: new RegExp(`^(${names.join("|")})$`) }, (args) => {
      // The stand-in's own require: the package itself, from node_modules when first called.
      if (args.namespace === "lazy-package") return { path: args.path, external: true };
      return args.importer.includes(LAZY_PACKAGES[args.path]!.importer)
        ? { path: args.path, namespace: "lazy-package" }
        : undefined;
    });
    build.onLoad({ filter: /.*/, namespace: "lazy-package" }, (args) => ({
      contents: LAZY_PACKAGES[args.path]!.standIn,
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
    plugins: [lazyBuiltins, lazyPackages],
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
