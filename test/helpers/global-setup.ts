/**
 * Runs once before the test files: makes (or finds) the migrated database that test/helpers/db.ts
 * copies for each test, for the backend this run uses, and the daemon's bundle the processes tests
 * start run (test/helpers/built-daemon.ts), and hands both to the files.
 */
import type { TestProject } from "vitest/node";
import { builtDaemon } from "./built-daemon.ts";
import { pgliteTemplate, serverTemplate } from "./template.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** The migrated template: a database name on the server, or a PGlite dump's path; "" for none. */
    databaseTemplate: string;
    /** The bundled daemon's main.js, which `missiond` processes in tests run. */
    daemonEntry: string;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  const serverUrl = process.env.DATABASE_URL;
  // Built while the template is made: esbuild works mostly off the main thread.
  const entry = builtDaemon();
  let template = "";
  try {
    template = serverUrl ? await serverTemplate(serverUrl) : await pgliteTemplate();
  } catch (err) {
    // Files that need no database still run; those that do start from an empty one and fail, if
    // the server is down, with their own error.
    console.warn(`no migrated template database: ${(err as Error).message}`);
  }
  project.provide("databaseTemplate", template);
  // Without it (the build failed) the run stops here with the build's error.
  project.provide("daemonEntry", await entry);
}
