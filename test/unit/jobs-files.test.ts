import { describe, expect, it } from "vitest";
import { toToml } from "../../src/jobs-files/export.ts";
import { JobsFileError, parseJobsFiles } from "../../src/jobs-files/parse.ts";
import { planApply, renderPlan, type LiveJob } from "../../src/jobs-files/plan.ts";

const parse = (text: string, path = "/etc/missiond/jobs.toml") => parseJobsFiles([{ path, text }]);

function problems(files: { path: string; text: string }[]): string[] {
  try {
    parseJobsFiles(files);
  } catch (err) {
    if (err instanceof JobsFileError) return [...err.problems];
    throw err;
  }
  throw new Error("no error");
}

const SAMPLE = `# ops jobs
[jobs.nightly]
agent = "ops"
cron = "0 3 * * *"
tz = "Europe/Berlin"
prompt = "check the backups"

[jobs.pulse]
agent = "ops"
every = "90m"
kind = "heartbeat"
active-hours = "09:00-18:00"
prompt = """
anything to do?
"""
starts_at = 2030-01-01T09:00:00+01:00
`;

describe("jobs files", () => {
  it("reads one table per job, flags' spellings included, normalized", () => {
    const [file] = parse(SAMPLE);
    expect(file!.jobs.map((j) => [j.name, j.line])).toEqual([
      ["nightly", 2],
      ["pulse", 8],
    ]);
    expect(file!.jobs[1]!.definition).toMatchObject({
      every: "1h30m",
      active_hours: "09:00-18:00",
      kind: "heartbeat",
      prompt: "anything to do?\n",
      starts_at: "2030-01-01T08:00:00.000Z",
      tz: "UTC",
    });
    expect(file!.jobs[1]!.definition.paused).toBeUndefined();
  });

  it("names the file, line, job and key of an unknown key, with the nearest known one", () => {
    expect(
      problems([{ path: "/j.toml", text: SAMPLE.replace('tz = "Europe/Berlin"', 'timezone = "UTC"\npromt = "x"') }]),
    ).toEqual([
      '/j.toml:5: job "nightly": unknown key "timezone" (did you mean "tz"?)',
      '/j.toml:6: job "nightly": unknown key "promt" (did you mean "prompt"?)',
    ]);
  });

  it("reports a job defined twice in one file with the TOML parser's line", () => {
    expect(problems([{ path: "/j.toml", text: `${SAMPLE}\n[jobs.nightly]\nagent = "x"\n` }])).toEqual([
      "/j.toml:18:2: not valid TOML: trying to redefine an already defined table or value",
    ]);
  });

  it("reports a name used in two files, with both places", () => {
    const other = `[jobs.pulse]\nagent = "a"\nevery = "1m"\nprompt = "p"\n`;
    expect(
      problems([
        { path: "/a.toml", text: SAMPLE },
        { path: "/b.toml", text: other },
      ]),
    ).toEqual(['/b.toml:1: job "pulse" is also defined in /a.toml:8']);
  });

  it("names the job and field of a bad cron, zone or missing schedule", () => {
    const text = `[jobs.a]\nagent = "x"\nprompt = "p"\ncron = "61 * * * *"\n[jobs.b]\nagent = "x"\nprompt = "p"\ncron = "* * * * *"\ntz = "Mars/Olympus"\n[jobs.c]\nagent = "x"\nprompt = "p"\n`;
    const found = problems([{ path: "/j.toml", text }]);
    expect(found[0]).toMatch(/^\/j\.toml:4: job "a": cron: invalid cron expression "61 \* \* \* \*"/);
    expect(found[1]).toBe(
      '/j.toml:9: job "b": tz: unknown time zone "Mars/Olympus" (use an IANA name such as Europe/Berlin)',
    );
    expect(found[2]).toBe('/j.toml:10: job "c": cron: give exactly one of cron or every');
  });

  it("exports what it reads back as the same definitions", () => {
    const [file] = parse(SAMPLE);
    const text = toToml(file!.jobs);
    expect(text).toContain('[jobs.pulse]\nagent = "ops"\nprompt = "anything to do?\\n"');
    expect(parse(text)[0]!.jobs.map((j) => j.definition)).toEqual(file!.jobs.map((j) => j.definition));
  });
});

describe("apply plan", () => {
  const [file] = parse(SAMPLE, "/f.toml");
  const view = (name: string, over: Record<string, unknown> = {}) =>
    ({
      id: String(name.length),
      name,
      agentId: "ops",
      prompt: "check the backups",
      cron: "0 3 * * *",
      every: null,
      timezone: "Europe/Berlin",
      kind: "cron_job",
      overlapPolicy: "skip",
      catchupPolicy: "latest",
      catchupMax: 10,
      sessionMode: "fresh",
      sessionId: null,
      activeHours: null,
      skipIfBusy: false,
      jitter: null,
      startsAt: null,
      endsAt: null,
      maxRuns: null,
      paused: false,
      concurrencyFull: "queue",
      approval: false,
      promptTemplate: false,
      eventsOnly: false,
      ...over,
    }) as unknown as LiveJob["view"];

  it("creates, leaves alone what matches, updates with the changed fields, adopts and prunes", () => {
    const live: LiveJob[] = [
      { view: view("nightly", { prompt: "old" }), managedBy: "/f.toml", drift: ["prompt"] },
      { view: view("gone"), managedBy: "/f.toml", drift: null },
      { view: view("manual"), managedBy: null, drift: null },
    ];
    const plan = planApply([file!], live, { prune: true, force: false });
    expect(plan.entries.map((e) => [e.action, e.name])).toEqual([
      ["update", "nightly"],
      ["create", "pulse"],
      ["delete", "gone"],
    ]);
    expect(renderPlan(plan, true)).toContain(
      '~ update     nightly  (/f.toml)\n    drift: changed outside the file (prompt)\n    prompt: "old" → "check the backups"',
    );
    const unchanged = planApply([file!], [{ view: view("nightly"), managedBy: "/f.toml", drift: null }], {
      prune: false,
      force: false,
    });
    expect(unchanged.entries.find((e) => e.name === "nightly")!.action).toBe("unchanged");
  });

  it("leaves a managed job's pause alone unless the file sets paused", () => {
    const paused: LiveJob[] = [{ view: view("nightly", { paused: true }), managedBy: "/f.toml", drift: ["paused"] }];
    expect(planApply([file!], paused, { prune: false, force: false }).entries[0]!.action).toBe("unchanged");
    const [pinned] = parse(SAMPLE.replace('tz = "Europe/Berlin"', 'tz = "Europe/Berlin"\npaused = false'), "/f.toml");
    expect(planApply([pinned!], paused, { prune: false, force: false }).entries[0]).toMatchObject({
      action: "update",
      changes: [{ field: "paused", before: true, after: false }],
      drift: ["paused"],
    });
  });

  it("refuses to take a job managed by another file unless forced", () => {
    const live: LiveJob[] = [{ view: view("nightly"), managedBy: "/other.toml", drift: null }];
    expect(() => planApply([file!], live, { prune: false, force: false })).toThrow(
      'job "nightly" in /f.toml is managed by /other.toml (an apply with --force moves it)',
    );
    const forced = planApply([file!], live, { prune: false, force: true });
    expect(forced.entries[0]).toMatchObject({ action: "update", takenFrom: "/other.toml" });
  });
});
