/**
 * Runs once before the test files: makes (or finds) the migrated database that test/helpers/db.ts
 * copies for each test, for the backend this run uses, and hands its name to the files.
 */
import type { TestProject } from "vitest/node";
import { pgliteTemplate, serverTemplate } from "./template.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** The migrated template: a database name on the server, or a PGlite dump's path; "" for none. */
    databaseTemplate: string;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  const serverUrl = process.env.DATABASE_URL;
  let template = "";
  try {
    template = serverUrl ? await serverTemplate(serverUrl) : await pgliteTemplate();
  } catch (err) {
    // Files that need no database still run; those that do start from an empty one and fail, if
    // the server is down, with their own error.
    console.warn(`no migrated template database: ${(err as Error).message}`);
  }
  project.provide("databaseTemplate", template);
}
