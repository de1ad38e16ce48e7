// Builds the dashboard into ui/dist (or the folder given): one script, one stylesheet and the page,
// bundled by esbuild with everything they import. `npm install` runs it (the prepare script); the
// daemon only serves the result, so nothing is fetched from a CDN or compiled at run time.
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
export const DEFAULT_OUT = join(here, "dist");

export async function buildUi(outdir: string = DEFAULT_OUT): Promise<{ bytes: number }> {
  const { build } = await import("esbuild");
  mkdirSync(outdir, { recursive: true });
  const result = await build({
    entryPoints: { app: join(here, "src/main.ts"), style: join(here, "src/style.css") },
    outdir,
    bundle: true,
    format: "esm",
    target: "es2022",
    minify: true,
    legalComments: "none",
    metafile: true,
    logLevel: "warning",
  });
  copyFileSync(join(here, "index.html"), join(outdir, "index.html"));
  const bytes = Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
  return { bytes };
}

if (import.meta.main) {
  const outdir = process.argv[2] ?? DEFAULT_OUT;
  try {
    const { bytes } = await buildUi(outdir);
    console.log(`dashboard built into ${outdir} (${(bytes / 1024).toFixed(1)} KiB)`);
  } catch (err) {
    // An install without dev dependencies (npm install --omit=dev) has no esbuild: the daemon still
    // installs and runs, and /ui says the dashboard was not built. Any other failure is an error.
    if (
      (err as NodeJS.ErrnoException).code !== "ERR_MODULE_NOT_FOUND" ||
      !String((err as Error).message).includes("esbuild")
    )
      throw err;
    console.warn("esbuild is not installed (dev dependencies omitted?): the dashboard is not built; /ui will say so");
  }
}
