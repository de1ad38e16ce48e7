import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runPage, type PageResult } from "../../src/docs/transcripts/run.ts";
import { prerequisite } from "../helpers/prerequisite.ts";
import { pageDaemonOptions } from "../helpers/process.ts";

const example = fileURLToPath(new URL("fixtures/example.md", import.meta.url));
const missing = prerequisite(existsSync("/bin/bash") ? null : "bash (the transcripts' shell)");

// On the embedded suite only (EMBEDDED_ONLY in vitest.config.ts).
describe.skipIf(missing)("regenerating a page's transcripts from a real daemon", () => {
  const dir = mkdtempSync(join(tmpdir(), "docs-example-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let first: PageResult;

  it("keeps an output that differs only in its times, rewrites stale ones, and reports a failing command", async () => {
    first = await runPage(example, pageDaemonOptions());
    expect(first.transcripts).toBe(1);
    const [add, show, cat, rm] = first.commands;
    expect(add).toMatchObject({
      code: 0,
      same: true,
      output: [expect.stringMatching(/^added cron job 1 "nightly"; next fire /)],
    });
    expect(show).toMatchObject({ code: 4, expectedExit: 4, same: false });
    expect(show!.output.join("\n")).toMatch(/99/);
    expect(cat).toMatchObject({ code: 0, same: false, output: ["remember the backups"] });
    expect(rm!.code).not.toBe(0);
    expect(first.failed).toEqual([rm]);
    expect(first.stale).toEqual([show, cat, rm]);
    // The current output keeps the page's own text; the others are what the daemon printed.
    expect(first.text).toContain(
      "next fire 2000-01-01T03:00:00.000Z\n$ missiond cron show 99  # exits 4\n" + show!.output.join("\n"),
    );
    expect(first.text).toContain("$ cat note.txt\nremember the backups\n$ missiond cron rm 98\n");
  }, 120_000);

  it("regenerates a rewritten page to itself", async () => {
    const rewritten = join(dir, "example.md");
    writeFileSync(rewritten, first.text);
    const second = await runPage(rewritten, pageDaemonOptions());
    expect(second.stale).toEqual([]);
    expect(second.text).toBe(readFileSync(rewritten, "utf8"));
    expect(second.failed.map((c) => c.shown[0])).toEqual(["$ missiond cron rm 98"]);
  }, 120_000);
});
