import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { addJobFlags, jobBody } from "../../src/cli/commands/job-flags.ts";
import { fileKeyOf, jobFieldList, longFlag } from "../../src/cron/fields.ts";
import { addJobInput, editJobInput } from "../../src/cron/input.ts";
import { snapshot } from "../../src/cron/revisions.ts";
import { jobView } from "../../src/cron/views.ts";
import { toToml } from "../../src/jobs-files/export.ts";
import { parseJobsFiles } from "../../src/jobs-files/parse.ts";
import { definitionSchema, FILE_KEYS, jobSpec } from "../../src/jobs-files/spec.ts";
import { jobRow } from "../helpers/job-row.ts";

/** Every surface of a job's fields is made from the one table: a field declared there is on each. */

const flagsOf = (mode: "add" | "edit") =>
  addJobFlags(new Command(mode), mode).options.map((option) => option.long!.replace(/^--(no-)?/, ""));

const shapeKeys = (schema: { shape: object }) => Object.keys(schema.shape);

const row = jobRow(0, { id: 7n, name: "n", description: "what it is for", cronExpr: null, everyMs: 5_400_000 });

describe("the job table", () => {
  it.each(jobFieldList.map((f) => [f.api, f] as const))("puts %s on every surface that takes it", (api, field) => {
    expect(shapeKeys(addJobInput)).toContain(api);
    if (field.addOnly) expect(shapeKeys(editJobInput)).not.toContain(api);
    else expect(shapeKeys(editJobInput)).toContain(api);
    expect(Object.keys(jobView(row))).toContain(api);
    expect(Object.keys(snapshot(row))).toContain(api);
    if (field.cli) {
      const flag = longFlag(field.cli.flags);
      if (field.cli.only !== "edit") expect(flagsOf("add")).toContain(flag);
      if (field.cli.only !== "add" && !field.addOnly) expect(flagsOf("edit")).toContain(flag);
    }
    const key = fileKeyOf(field);
    if (key === null) return;
    expect(FILE_KEYS[key]).toBe(api);
    expect(shapeKeys(jobSpec)).toContain(key);
    expect(shapeKeys(definitionSchema)).toContain(key);
  });

  it("has cron add take --catchup-max like cron edit, the API and jobs files", () => {
    const required = ["--name", "n", "--agent", "a1", "--prompt", "p", "--every", "1h"];
    const add = addJobFlags(new Command("add"), "add");
    add.parse([...required, "--catchup-max", "3"], { from: "user" });
    expect(jobBody(add.opts(), "add")).toMatchObject({ catchupMax: 3 });
    const refusing = addJobFlags(new Command("add").exitOverride().configureOutput({ writeErr: () => {} }), "add");
    expect(() => refusing.parse([...required, "--catchup-max", "1001"], { from: "user" })).toThrow(/catchup-max/);
  });

  it("sends what a flag implies unless another flag says otherwise", () => {
    const edit = (...argv: string[]) => {
      const command = addJobFlags(new Command("edit"), "edit");
      command.parse(argv, { from: "user" });
      return jobBody(command.opts(), "edit");
    };
    expect(edit("--session", "s1")).toEqual({ sessionId: "s1", sessionMode: "fixed" });
    expect(edit("--session", "none")).toEqual({ sessionId: null, sessionMode: "fresh" });
    expect(edit("--session", "s1", "--fresh-session")).toEqual({ sessionId: "s1", sessionMode: "fresh" });
    expect(edit("--no-skip-if-busy", "--max-runs", "none")).toEqual({ skipIfBusy: false, maxRuns: null });
  });

  it("exports every file key a job sets, and reads the export back as the same definition", () => {
    const text = `[jobs.all]
agent = "a1"
prompt = "p"
description = "d"
every = "90m"
tz = "Europe/Berlin"
kind = "heartbeat"
overlap = "allow"
catchup = "all"
catchup_max = 4
session = "s1"
active_hours = "09:00-18:00"
skip_if_busy = true
jitter = "30s"
starts_at = 2030-01-01T00:00:00Z
ends_at = 2031-01-01T00:00:00Z
max_runs = 9
paused = true
alert_failures = 3
alert_recover_after = 2
alert_no_success_within = "26h"
alert_repeat_every = "4h"
pause_after_failures = 5
concurrency_key = "provider-x"
concurrency_limit = 2
concurrency_full = "skip"
concurrency_max_wait = "90m"
approval = true
approval_window = "30m"
budget = "$5/d, 10 runs/hour"
preflight = "check-inbox --dir '/var/mail/a b'"
template = true
labels = { team = "ops", "env.tier" = "prod" }

[jobs.other]
agent = "a1"
prompt = "p"
cron = "0 3 * * *"

[jobs.event]
agent = "a1"
prompt = "p"
events_only = true
`;
    const jobs = parseJobsFiles([{ path: "/all.toml", text }])[0]!.jobs;
    const exported = toToml(jobs.map(({ name, definition }) => ({ name, definition })));
    for (const key of Object.keys(FILE_KEYS)) expect(exported, key).toMatch(new RegExp(`^${key} = `, "m"));
    expect(exported).toContain('every = "1h30m"');
    expect(exported).toContain('budget = "$5/day, 10 runs/hour"');
    expect(exported).toContain('labels = { "env.tier" = "prod", team = "ops" }');
    const again = parseJobsFiles([{ path: "/again.toml", text: exported }])[0]!.jobs;
    expect(again.map((job) => job.definition)).toEqual(jobs.map((job) => job.definition));
  });
});
