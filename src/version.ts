import { readFileSync } from "node:fs";
import { packagePath } from "./paths.ts";

/** missiond's version, from package.json (read rather than imported, so no build copies it). */
export const VERSION: string = (JSON.parse(readFileSync(packagePath("package.json"), "utf8")) as { version: string })
  .version;
