// Runs before every test file: whatever a file started or made and did not clean up itself (a
// test failed half-way, a hook threw) is killed and removed once the file is done. Every test
// must assert at least once: one whose checks sit in a loop or callback that never ran fails
// instead of passing on nothing.
import { afterAll, beforeAll, beforeEach, expect } from "vitest";
import { cpuMark, logCpu, type CpuMark } from "./helpers/cpu-log.ts";
import { killChildren } from "./helpers/process.ts";
import { removeTempDirs } from "./helpers/tmp.ts";

beforeEach(() => {
  expect.hasAssertions();
});

let mark: CpuMark | null = null;
beforeAll(() => {
  mark = cpuMark();
});

// vitest requires a hook's context as a destructuring pattern, even one taking nothing from it.
// eslint-disable-next-line no-empty-pattern
afterAll(async ({}, file) => {
  await killChildren();
  removeTempDirs();
  logCpu(file.file.filepath ?? file.name, mark);
});
