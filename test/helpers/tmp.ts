import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Directories this test file made; test/setup.ts removes what is left after the file, also when
// a test or a hook failed.
const made = new Set<string>();

/** A new empty directory `missiond-<prefix>-…` under the system's temporary directory. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `missiond-${prefix}-`));
  made.add(dir);
  return dir;
}

/** Removes a directory (and what is in it) now; nothing happens if it is already gone. */
export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  made.delete(dir);
}

/** Removes every directory this file made that is still there. */
export function removeTempDirs(): void {
  for (const dir of made) removeTempDir(dir);
}
