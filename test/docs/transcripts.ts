import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stepsOf } from "../../src/docs/transcripts/page.ts";
import { explain, runPage } from "../../src/docs/transcripts/run.ts";
import { backendName } from "../helpers/db.ts";
import { prerequisite } from "../helpers/prerequisite.ts";
import { ROOT, markdownPages } from "./pages.ts";

/**
 * Every console transcript of the README and docs/ runs against a real daemon (one per page) and
 * regenerates to the text the page has, times and ids aside: `npm run docs` rewrites them.
 */

const pages = markdownPages().filter((page) =>
  stepsOf(readFileSync(join(ROOT, page), "utf8"), page).some((s) => s.kind === "transcript"),
);

/** The shell, and the tools besides missiond the transcripts call. */
const onPath = (tool: string) => (process.env.PATH ?? "").split(":").some((dir) => existsSync(join(dir, tool)));
const scripts = pages.flatMap((page) =>
  stepsOf(readFileSync(join(ROOT, page), "utf8"), page).flatMap((s) =>
    s.kind === "transcript" ? s.commands.map((c) => c.script) : [],
  ),
);
const tools = [
  "bash",
  ...["jq", "curl", "gzip"].filter((tool) => scripts.some((s) => new RegExp(`\\b${tool}\\b`).test(s))),
];
const missing = prerequisite(tools.filter((tool) => !onPath(tool)).join(", ") || null);

// The pages' daemons always run on their own embedded database (src/docs/transcripts/daemon.ts
// drops DATABASE_URL), so the suite on Postgres would run the very same thing again: once is enough.
describe.skipIf(missing || backendName === "postgres")("the docs' transcripts, from a real daemon", () => {
  it("are found", () => {
    expect(pages.length).toBeGreaterThan(0);
  });

  it.each(pages)(
    "%s: every command exits as shown and prints what the page shows",
    async (page) => {
      const result = await runPage(join(ROOT, page));
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
