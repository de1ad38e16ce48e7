// Runs before every test file: whatever a file started or made and did not clean up itself (a
// test failed half-way, a hook threw) is killed and removed once the file is done.
import { afterAll } from "vitest";
import { killChildren } from "./helpers/process.ts";
import { removeTempDirs } from "./helpers/tmp.ts";

afterAll(async () => {
  await killChildren();
  removeTempDirs();
});
