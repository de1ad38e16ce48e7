import { describe, expect, it } from "vitest";
import { EXAMPLES } from "../../src/cli/examples.ts";
import { commandPaths, runCli } from "../../src/cli/program.ts";
import type { CliIo } from "../../src/cli/io.ts";

function io(out: string[]): CliIo {
  return {
    env: {},
    cwd: "/tmp",
    hostname: "test",
    probe: { pid: 1, isAlive: () => false },
    stdout: (text) => void out.push(text),
    stderr: (text) => void out.push(text),
    onSignal: () => {},
    forceExit: (code) => {
      throw new Error(`exit ${code}`);
    },
  };
}

describe("CLI help", () => {
  const paths = commandPaths(io([]));

  it("has examples for every command, and none for a command that does not exist", () => {
    expect(paths.length).toBeGreaterThan(30);
    expect(paths.filter((p) => !EXAMPLES[p])).toEqual([]);
    expect(Object.keys(EXAMPLES).filter((p) => !paths.includes(p))).toEqual([]);
  });

  it("prints them with --help (exit 0), and each example names its own command", async () => {
    for (const path of paths) {
      const out: string[] = [];
      const code = await runCli([...(path ? path.split(" ") : []), "--help"], io(out));
      const text = out.join("");
      expect(code, path).toBe(0);
      expect(text, path).toContain("\nExamples:\n");
      for (const example of EXAMPLES[path]!) {
        expect(text).toContain(`  ${example}`);
        // "missiond cron add …" under "cron add", or the program's own examples under "".
        if (path)
          expect(example.replace(/^\S+=\S+ /, ""), path).toMatch(
            new RegExp(`^missiond (--\\S+ \\S+ )*${path.split(" ")[0]}\\b`),
          );
      }
    }
  });
});
