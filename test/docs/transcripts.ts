import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { stepsOf, type Step } from "../../src/docs/transcripts/page.ts";
import { explain, runPage } from "../../src/docs/transcripts/run.ts";
import { prerequisite } from "../helpers/prerequisite.ts";
import { pageDaemonOptions } from "../helpers/process.ts";
import { ROOT, markdownPages } from "./pages.ts";

/**
 * Every console transcript of the README and docs/ runs against a real daemon (one per page) and
 * regenerates to the text the page has, times and ids aside: `npm run docs` rewrites them.
 *
 * A page takes from twenty seconds to over a minute (its daemon's start, then one `missiond` process
 * per command), nearly all of it waiting on child processes: the pages are shared out between the
 * files transcripts-<n>.test.ts, so that workers run them side by side rather than one file
 * holding the suite's end for minutes.
 */

const commandsOf = (steps: Step[]) => steps.flatMap((s) => (s.kind === "transcript" ? s.commands : []));
const pages = markdownPages()
  .map((page) => ({ page, commands: commandsOf(stepsOf(readFileSync(join(ROOT, page), "utf8"), page)) }))
  .filter(({ commands }) => commands.length > 0);

/** The files that share the pages, found by name: a new one takes its share without other changes. */
const SHARD_FILE = /^transcripts-(\d+)\.test\.ts$/;
const shardFiles = readdirSync(fileURLToPath(new URL(".", import.meta.url))).filter((f) => SHARD_FILE.test(f));

/**
 * The pages of each file: the longest first, each to the file with the least so far. A page's
 * weight is its commands plus what its daemon's start and stop cost, about fifteen commands' worth.
 */
function shares(files: number): string[][] {
  const weight = (p: (typeof pages)[number]) => 15 + p.commands.length;
  const bins = Array.from({ length: files }, () => ({ pages: [] as string[], weight: 0 }));
  for (const p of [...pages].sort((a, b) => weight(b) - weight(a) || a.page.localeCompare(b.page))) {
    const lightest = bins.reduce((min, bin) => (bin.weight < min.weight ? bin : min));
    lightest.pages.push(p.page);
    lightest.weight += weight(p);
  }
  return bins.map((bin) => bin.pages.sort());
}

/** The shell, and the tools besides missiond the transcripts call. */
const onPath = (tool: string) => (process.env.PATH ?? "").split(":").some((dir) => existsSync(join(dir, tool)));
const scripts = pages.flatMap((p) => p.commands.map((c) => c.script));
const tools = [
  "bash",
  ...["jq", "curl", "gzip"].filter((tool) => scripts.some((s) => new RegExp(`\\b${tool}\\b`).test(s))),
];
const missing = prerequisite(tools.filter((tool) => !onPath(tool)).join(", ") || null);

/** The tests of file transcripts-`n`.test.ts (numbered from 1): its share of the pages. */
export function describeTranscripts(n: number): void {
  // On the embedded suite only (EMBEDDED_ONLY in vitest.config.ts).
  describe.skipIf(missing)(`the docs' transcripts, from a real daemon (${n})`, () => {
    const mine = shares(shardFiles.length)[n - 1] ?? [];

    it("are found, and every page is in one file's share", () => {
      expect(pages.length).toBeGreaterThan(0);
      // Files numbered 1 to N, none missing: a gap would leave a share of the pages untested.
      expect(shardFiles.map((f) => Number(SHARD_FILE.exec(f)![1])).sort((a, b) => a - b)).toEqual(
        shardFiles.map((_, i) => i + 1),
      );
      expect(mine.length).toBeGreaterThan(0);
      expect(shares(shardFiles.length).flat().sort()).toEqual(pages.map((p) => p.page).sort());
    });

    it.each(mine)(
      "%s: every command exits as shown and prints what the page shows",
      async (page) => {
        const result = await runPage(join(ROOT, page), pageDaemonOptions());
        expect(result.commands.length).toBeGreaterThan(0);
        expect(
          result.failed.map((c) => explain(page, c)),
          "commands that exit otherwise than the page says",
        ).toEqual([]);
        expect(
          result.stale.map((c) => explain(page, c)),
          "outputs that differ: run npm run docs",
        ).toEqual([]);
      },
      300_000,
    );
  });
}
