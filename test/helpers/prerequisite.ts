import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { bwrapProblem } from "../../src/plugins/native-sandbox.ts";

/**
 * A test whose system prerequisite (a Debian package, root, a second Postgres cluster) is missing
 * skips, naming it. Under CI, which installs every prerequisite (.ci/run), the same absence fails
 * the file instead: a green CI has run every such test.
 */
export function prerequisite<T>(missing: T): T {
  if (missing && process.env.CI) throw new Error(`CI must provide this test's prerequisite: ${String(missing)}`);
  return missing;
}

/**
 * Names listed in MISSIOND_TEST_HIDE (comma-separated: "chromium,python3-httpx") count as missing
 * although installed, so a machine that has them can check that their tests skip.
 */
export function hiddenForTest(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.MISSIOND_TEST_HIDE ?? "")
    .split(",")
    .map((s) => s.trim())
    .includes(name);
}

/** The path of `program` (a name looked up on PATH, or an absolute path), or null. */
function locate(program: string, env: NodeJS.ProcessEnv): string | null {
  if (program.includes("/")) return existsSync(program) ? program : null;
  for (const dir of (env.PATH ?? "").split(delimiter).filter(Boolean))
    if (existsSync(join(dir, program))) return join(dir, program);
  return null;
}

/**
 * Why `program` cannot be run ("openssl not found (Debian package openssl)"), or null; the first
 * of `candidates` that exists is the one used. Hidden by MISSIOND_TEST_HIDE under its package name.
 */
export function missingProgram(
  pkg: string,
  candidates: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): string | null {
  const name = candidates[0]!;
  if (hiddenForTest(pkg, env)) return `${name} hidden by MISSIOND_TEST_HIDE (Debian package ${pkg})`;
  return candidates.some((c) => locate(c, env)) ? null : `${name} not found (Debian package ${pkg})`;
}

/** The interpreter Python plugins run under (src/plugins/python/process.ts picks it the same way). */
const PYTHON = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";

/** Why Python plugins cannot run here, or null. */
export const pythonMissing = (env: NodeJS.ProcessEnv = process.env): string | null =>
  missingProgram("python3", [PYTHON], { ...env, PATH: "/usr/local/bin:/usr/bin:/bin" });

/** Why a Python plugin importing `module` (Debian package `pkg`) cannot run here, or null. */
export function pythonModuleMissing(module: string, pkg: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const python = pythonMissing(env);
  if (python) return python;
  if (hiddenForTest(pkg, env)) return `python3's ${module} hidden by MISSIOND_TEST_HIDE (Debian package ${pkg})`;
  const probe = spawnSync(PYTHON, ["-c", `import ${module}`], { stdio: "ignore", timeout: 10_000 });
  return probe.status === 0 ? null : `python3 cannot import ${module} (Debian package ${pkg})`;
}

/**
 * Why a native plugin (command hook, Python, shell hook) cannot write into (or run from) a test's folders, or
 * null: a root daemon without a working bubblewrap runs them as `nobody` (src/plugins/native-sandbox.ts).
 */
export function nativeWritesMissing(env: NodeJS.ProcessEnv = process.env): string | null {
  if (process.getuid?.() !== 0) return null;
  if (hiddenForTest("bubblewrap", env)) return "bwrap hidden by MISSIOND_TEST_HIDE (Debian package bubblewrap)";
  const broken = bwrapProblem();
  return broken ? `${broken}: as root, native plugins then run as nobody (Debian package bubblewrap)` : null;
}
