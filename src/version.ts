import { readFileSync } from "node:fs";

/**
 * missiond's version, from package.json. Read rather than imported: the compiled files in dist/
 * sit at the same depth as src/, so one relative path serves both, and the compiler need not copy
 * package.json into dist/.
 */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;
