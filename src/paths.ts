import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The package's root: the nearest folder above this module whose package.json is missiond's. The
 * same answer from a checkout (src/*.ts), a tsc build (dist/**.js) and the bundled dist/main.js,
 * which sit at different depths below it.
 */
function findPackageRoot(from: string): string {
  for (let dir = dirname(from); ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === "missiond")
      return dir;
    if (dirname(dir) === dir) throw new Error(`missiond's package.json was not found above ${from}`);
  }
}

export const PACKAGE_ROOT = findPackageRoot(fileURLToPath(import.meta.url));

/** A path inside the package (the migrations, the dashboard, the example plugins). */
export const packagePath = (...parts: string[]): string => join(PACKAGE_ROOT, ...parts);
