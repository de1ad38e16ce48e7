import { execFile } from "node:child_process";
import { existsSync, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";

const PYTHON = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
const TIMEOUT_MS = 10_000;
// Parses each file named (ast.parse compiles to a tree and executes nothing) and prints the first problem.
const CHECK = `import ast, sys
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as f:
            ast.parse(f.read(), path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        print(f"{path}: {type(e).__name__}: {e}")
        sys.exit(1)
`;

/** The .py files under a folder, relative to it (interpreters' caches left out). */
function pythonFiles(dir: string, prefix = ""): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(dir, prefix)).sort()) {
    if (entry === "__pycache__") continue;
    const rel = prefix ? `${prefix}/${entry}` : entry;
    const stat = lstatSync(join(dir, rel));
    if (stat.isDirectory()) found.push(...pythonFiles(dir, rel));
    else if (stat.isFile() && entry.endsWith(".py")) found.push(rel);
  }
  return found;
}

/**
 * Checks that every Python file of a plugin folder parses, without running any of it: an isolated
 * interpreter (`-I -S`: no site packages, no environment, no current folder on the path) reads each
 * file with ast.parse. Resolves null when all parse, else the first problem (`handler.py: SyntaxError: …`).
 */
export function pythonSyntaxProblem(dir: string): Promise<string | null> {
  const files = pythonFiles(dir);
  if (files.length === 0) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    execFile(
      PYTHON,
      ["-I", "-S", "-B", "-c", CHECK, ...files],
      { cwd: dir, env: { PATH: "/usr/bin:/bin" }, timeout: TIMEOUT_MS, maxBuffer: 64 * 1024 },
      (err, stdout) => {
        if (!err) return resolve(null);
        if (stdout.trim()) return resolve(stdout.trim().split("\n")[0]!);
        reject(new Error(`cannot check the Python files' syntax with ${PYTHON}: ${err.message}`));
      },
    );
  });
}
