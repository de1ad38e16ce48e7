import { describe, expect, it } from "vitest";
import { mask, sameOutput } from "../../src/docs/transcripts/mask.ts";
import { commandsOf, renderTranscript, stepsOf } from "../../src/docs/transcripts/page.ts";

const page = [
  "# Example",
  "",
  "<!-- file: jobs.toml -->",
  "```toml",
  "[[job]]",
  'name = "nightly"',
  "```",
  "",
  "<!-- transcript -->",
  "",
  "```console",
  "$ missiond cron ls",
  "ID  NAME",
  "1   nightly",
  "$ missiond cron show 99  # exits 4",
  "missiond: no cron job 99",
  "```",
  "",
  "```console",
  "$ not a transcript: no marker above",
  "```",
].join("\n");

describe("a docs page's transcripts", () => {
  it("finds the marked console blocks and the file blocks, in page order", () => {
    const steps = stepsOf(page);
    expect(steps.map((s) => s.kind)).toEqual(["file", "transcript"]);
    expect(steps[0]).toEqual({ kind: "file", name: "jobs.toml", content: '[[job]]\nname = "nightly"\n' });
    const transcript = steps[1]!;
    if (transcript.kind !== "transcript") throw new Error("not a transcript");
    expect(transcript.line).toBe(11);
    expect(transcript.commands.map((c) => [c.script, c.expectedExit, c.output])).toEqual([
      ["missiond cron ls", 0, ["ID  NAME", "1   nightly"]],
      ["missiond cron show 99  # exits 4", 4, ["missiond: no cron job 99"]],
    ]);
  });

  it("refuses a marked block that is not console", () => {
    expect(() => stepsOf("<!-- transcript -->\n```sh\n$ ls\n```\n", "p.md")).toThrow(/p.md:2: .*console/);
  });

  it("keeps continuation lines and here-documents with their command", () => {
    const commands = commandsOf([
      "$ cat > jobs.toml <<'EOF'",
      "$ not a command: inside the here-document",
      "EOF",
      "$ missiond apply jobs.toml \\",
      "    --dry-run",
      "plan: 1 to create",
    ]);
    expect(commands.map((c) => c.shown.length)).toEqual([3, 2]);
    expect(commands[0]!.script).toBe("cat > jobs.toml <<'EOF'\n$ not a command: inside the here-document\nEOF");
    expect(commands[0]!.output).toEqual([]);
    expect(commands[1]!.output).toEqual(["plan: 1 to create"]);
    expect(renderTranscript(commands)).toEqual([
      "$ cat > jobs.toml <<'EOF'",
      "$ not a command: inside the here-document",
      "EOF",
      "$ missiond apply jobs.toml \\",
      "    --dry-run",
      "plan: 1 to create",
    ]);
  });
});

describe("comparing a transcript's output with the page's", () => {
  it("ignores times, instance names, uids and timing columns, and column padding", () => {
    const page = [
      "ID  JOB  SCHEDULED FOR             TRIGGER  STATUS     LATE MS  BY        REASON",
      "1   1    2026-12-05T21:19:58.657Z  manual   Succeeded  0        vm:12067  -",
      "notify 1 set for 2026-12-05T21:30:15.023Z (in 600s); actor uid:0",
    ];
    const now = [
      "ID  JOB  SCHEDULED FOR             TRIGGER  STATUS     LATE MS  BY           REASON",
      "1   1    2027-01-01T08:00:00.001Z  manual   Succeeded  -12      host-b:4711  -",
      "notify 1 set for 2027-01-01T08:10:00.001Z (in 599s); actor uid:1000",
    ];
    expect(sameOutput(page, now)).toBe(true);
  });

  it("still sees a different status, id, name or count", () => {
    const page = ["ID  STATUS     REASON", "1   Succeeded  -"];
    expect(sameOutput(page, ["ID  STATUS     REASON", "1   Cancelled  -"])).toBe(false);
    expect(sameOutput(page, ["ID  STATUS     REASON", "2   Succeeded  -"])).toBe(false);
    expect(sameOutput(['added cron job 1 "nightly"'], ['added cron job 1 "weekly"'])).toBe(false);
    expect(sameOutput(["generation 2: 1 loaded"], ["generation 2: 0 loaded"])).toBe(false);
  });

  it("masks a timing column only below its header, and JSON durations", () => {
    expect(mask(["POS  NAME  MS", "1    a     12"])).toBe("POS NAME MS\n1 a <ms>");
    expect(mask(['{ "latenessMs": -3, "id": "7" }'])).toBe('{ "latenessMs": <ms>, "id": "7" }');
    // A timing narrower than the placeholder, and one wider that widens its column: the same output.
    expect(sameOutput(["ID  MS  OUTCOME", "1   37  cancelled"], ["ID  MS   OUTCOME", "1   404  cancelled"])).toBe(true);
  });
});
