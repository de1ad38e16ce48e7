import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { Metafile } from "esbuild";
import { buildDaemon, LAZY_PACKAGES } from "../../build.ts";
import { tempDir } from "../helpers/tmp.ts";

/** The external packages an output loads when it is loaded: its static imports, followed through chunks. */
function loadedWith(metafile: Metafile, output: string): Set<string> {
  const externals = new Set<string>();
  const seen = new Set<string>();
  const visit = (path: string) => {
    if (seen.has(path)) return;
    seen.add(path);
    for (const imp of metafile.outputs[path]?.imports ?? []) {
      if (imp.kind !== "import-statement") continue;
      if (imp.external) externals.add(imp.path);
      else visit(imp.path);
    }
  };
  visit(output);
  return externals;
}

/** The outputs (main.js, chunks) loaded when `output` is: itself and its static imports, followed through chunks. */
function outputsWith(metafile: Metafile, output: string, seen = new Set<string>()): Set<string> {
  if (seen.has(output)) return seen;
  seen.add(output);
  for (const imp of metafile.outputs[output]?.imports ?? [])
    if (imp.kind === "import-statement" && !imp.external) outputsWith(metafile, imp.path, seen);
  return seen;
}

/** main.js and the serve chunk it imports: what `serve` loads up front. */
function mainAndServe(metafile: Metafile): { main: string; serve: string } {
  const outputs = Object.keys(metafile.outputs);
  const main = outputs.find((o) => o.endsWith("/main.js") && !o.includes("/chunks/"));
  if (!main) throw new Error(`no main.js among ${outputs.join(", ")}`);
  const serve = metafile.outputs[main]!.imports.find((i) => i.kind === "dynamic-import" && /serve-/.test(i.path));
  if (!serve) throw new Error("main.js imports no serve chunk");
  return { main, serve: serve.path };
}

describe("the bundled daemon (build.ts)", () => {
  // One build for the file: each test reads its metafile.
  let metafile: Metafile;
  beforeAll(async () => {
    ({ metafile } = await buildDaemon(tempDir("build")));
  }, 60_000);

  it("loads the embedded database only when it is opened: a daemon on a server never loads PGlite", () => {
    const outputs = Object.keys(metafile.outputs);
    // What `serve` loads up front: main.js and the serve chunk it imports, with their static imports.
    const { main, serve } = mainAndServe(metafile);
    const atStart = new Set([...loadedWith(metafile, main), ...loadedWith(metafile, serve)]);
    expect(atStart).toContain("pino");
    expect(atStart).not.toContain("@electric-sql/pglite");
    // It is still in the build: a chunk of its own, imported dynamically when the database opens.
    const pgliteChunks = outputs.filter((o) => loadedWith(metafile, o).has("@electric-sql/pglite"));
    expect(pgliteChunks.length).toBeGreaterThan(0);
    expect(pgliteChunks.every((o) => o.includes("/chunks/"))).toBe(true);
  });

  it("loads the OpenTelemetry SDK and exporter only when tracing is on", () => {
    const { main, serve } = mainAndServe(metafile);
    const atStart = new Set([...outputsWith(metafile, main), ...outputsWith(metafile, serve)]);
    const sdk = /node_modules\/@opentelemetry\/(sdk-trace-base|exporter-trace-otlp-http|resources)\//;
    const loaded = [...atStart].flatMap((o) => Object.keys(metafile.outputs[o]!.inputs)).filter((i) => sdk.test(i));
    expect(loaded).toEqual([]);
    // Still in the build, in a chunk imported when the tracer is made.
    const elsewhere = Object.values(metafile.outputs).some((o) => Object.keys(o.inputs).some((i) => sdk.test(i)));
    expect(elsewhere).toBe(true);
  });

  it("leaves out fastify's default schema compilers and ajv: the API gives its own (src/api/app.ts)", () => {
    const compilers = /node_modules\/(ajv|ajv-formats|@fastify\/ajv-compiler|@fastify\/fast-json-stringify-compiler)\//;
    expect(Object.keys(metafile.inputs).filter((i) => compilers.test(i))).toEqual([]);
    // fastify still requires them by name, only when it is given no compilers, from node_modules.
    const schemaController = Object.entries(metafile.inputs).find(([path]) =>
      path.endsWith("node_modules/fastify/lib/schema-controller.js"),
    );
    if (!schemaController) throw new Error("fastify's schema controller is not in the bundle");
    expect(schemaController[1].imports.filter((i) => i.external).map((i) => i.path)).toEqual([
      "@fastify/ajv-compiler",
      "@fastify/fast-json-stringify-compiler",
    ]);
  });

  it("loads pg-boss's schedule parsers and the file server's glob only when first called, through stand-ins", async () => {
    const lazy = /node_modules\/(cron-parser|rrule-temporal|luxon|glob|light-my-request)\//;
    expect(Object.keys(metafile.inputs).filter((i) => lazy.test(i))).toEqual([]);
    // Every name their importers take from them, the stand-in exports.
    const modules = join(import.meta.dirname, "../../node_modules");
    const taken = new Set<string>();
    for (const dir of ["pg-boss/dist", "@fastify/static"])
      for (const file of readdirSync(join(modules, dir)).filter((f) => f.endsWith(".js"))) {
        const source = readFileSync(join(modules, dir, file), "utf8");
        for (const m of source.matchAll(/(?:import|const) \{([^}]+)\} (?:from |= require\()'([^']+)'/g))
          if (m[2]! in LAZY_PACKAGES) for (const name of m[1]!.split(",")) taken.add(`${m[2]}.${name.trim()}`);
      }
    expect([...taken].sort()).toEqual([
      "cron-parser.CronExpressionParser",
      "glob.glob",
      "rrule-temporal.RRuleTemporal",
    ]);
    // A stand-in loads the package its importer's own require would find: one copy in the lockfile.
    const lock = JSON.parse(readFileSync(join(modules, "../package-lock.json"), "utf8")) as { packages: object };
    const copies = (name: string) => Object.keys(lock.packages).filter((p) => p.endsWith(`node_modules/${name}`));
    for (const name of Object.keys(LAZY_PACKAGES)) expect(copies(name), name).toEqual([`node_modules/${name}`]);
    // Called, each loads its package and answers as the package does.
    const load = (name: string) => {
      const module = { exports: {} as Record<string, unknown> };
      const require = createRequire(import.meta.url);
      new Function("module", "require", LAZY_PACKAGES[name]!.standIn)(module, require);
      return module.exports;
    };
    const { CronExpressionParser } = load("cron-parser") as {
      CronExpressionParser: { parse: (e: string, o: object) => { next: () => { toISOString: () => string } } };
    };
    const next = CronExpressionParser.parse("0 12 * * *", { tz: "UTC", currentDate: new Date("2026-12-07T00:00:00Z") });
    expect(next.next().toISOString()).toBe("2026-12-07T12:00:00.000Z");
    const { RRuleTemporal } = load("rrule-temporal") as {
      RRuleTemporal: new (o: object) => { toString: () => string };
    };
    const rule = new RRuleTemporal({ rruleString: "DTSTART:20261207T000000Z\nRRULE:FREQ=DAILY;COUNT=2", tzid: "UTC" });
    expect(rule.toString()).toContain("FREQ=DAILY");
    const { glob } = load("glob") as { glob: (pattern: string, options: object) => Promise<string[]> };
    expect(await glob("build.*", { cwd: join(modules, "..") })).toEqual(["build.ts"]);
  });

  it("writes ASCII only: one other character and V8 holds a whole output's source at two bytes a character", () => {
    const nonAscii = Object.keys(metafile.outputs)
      .filter((o) => o.endsWith(".js"))
      .filter((o) => /\P{ASCII}/u.test(readFileSync(o, "utf8")));
    expect(nonAscii).toEqual([]);
  });

  it("loads neither undici nor node:http2 at start: node:http(s) not imported as ES modules, fastify's http2 on first use", () => {
    const esmImports = Object.entries(metafile.outputs).flatMap(([output, { imports }]) =>
      imports
        .filter((i) => i.external && i.kind === "import-statement" && /^node:https?$/.test(i.path))
        .map((i) => `${output}: ${i.path}`),
    );
    expect(esmImports).toEqual([]);
    // fastify's server module gets node:http2 through a stand-in that loads it on first use.
    const server = Object.entries(metafile.inputs).find(([path]) =>
      path.endsWith("node_modules/fastify/lib/server.js"),
    );
    if (!server) throw new Error("fastify's server module is not in the bundle");
    const http2 = server[1].imports.filter((i) => /http2$/.test(i.path)).map((i) => i.path);
    expect(http2).toEqual(["lazy-builtin:http2"]);
  });

  it("loads node:https on first use: fastify's (TLS servers) and prom-client's (its push gateway client)", () => {
    const importers = ["node_modules/fastify/lib/server.js", "node_modules/prom-client/lib/pushgateway.js"];
    for (const importer of importers) {
      const input = Object.entries(metafile.inputs).find(([path]) => path.endsWith(importer));
      if (!input) throw new Error(`${importer} is not in the bundle`);
      const https = input[1].imports.filter((i) => /https$/.test(i.path)).map((i) => i.path);
      expect(https, importer).toEqual(["lazy-builtin:https"]);
    }
  });
});
