// Runs before every test file: whatever a file started or made and did not clean up itself (a
// test failed half-way, a hook threw) is killed and removed once the file is done. Every test
// must assert at least once: one whose checks sit in a loop or callback that never ran fails
// instead of passing on nothing.
import { afterAll, beforeEach, expect } from "vitest";
import { killChildren } from "./helpers/process.ts";
import { removeTempDirs } from "./helpers/tmp.ts";

beforeEach(() => {
  expect.hasAssertions();
});

afterAll(async () => {
  await killChildren();
  removeTempDirs();
});
