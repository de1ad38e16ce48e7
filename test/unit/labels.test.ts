import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { addJobFlags, jobBody } from "../../src/cli/commands/job-flags.ts";
import { addJobInput } from "../../src/cron/input.ts";
import { jobsQuery } from "../../src/cron/input.ts";
import { hasLabels, labelsInput, normalizeLabels, parseLabel, parseLabelList } from "../../src/labels/labels.ts";
import { diffDefinitions } from "../../src/jobs-files/spec.ts";

const issues = (value: unknown) => {
  const parsed = labelsInput.safeParse(value);
  return parsed.success ? [] : parsed.error.issues.map((i) => i.message);
};

describe("job labels", () => {
  it("takes keys of lowercase letters, digits, '_', '.' and '-' and values up to 200 characters", () => {
    expect(issues({ team: "ops", "env.tier": "prod", a_b: "", "0x": "x".repeat(200) })).toEqual([]);
    expect(issues({ Team: "ops" })).toEqual([expect.stringMatching(/^label "Team": the key must be/)]);
    expect(issues({ "-x": "ops" })).toEqual([expect.stringMatching(/^label "-x"/)]);
    expect(issues({ ["k".repeat(64)]: "v" })).toEqual([expect.stringMatching(/the key must be 1-63/)]);
    expect(issues({ team: "x".repeat(201) })).toEqual(['label "team": the value is longer than 200 characters']);
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, "v"]));
    expect(issues(many)).toEqual(["at most 32 labels (33 given)"]);
  });

  it("names the bad label in a job request", () => {
    const parsed = addJobInput.safeParse({
      name: "n",
      agentId: "a",
      prompt: "p",
      every: "1h",
      labels: { "BAD KEY": "x" },
    });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues[0]!.message).toContain('label "BAD KEY"');
  });

  it("parses key=value and refuses text without a key", () => {
    expect(parseLabel("team=ops")).toEqual(["team", "ops"]);
    expect(parseLabel("url=a=b")).toEqual(["url", "a=b"]);
    expect(() => parseLabel("team")).toThrow(/key=value/);
    expect(() => parseLabel("=ops")).toThrow(/key=value/);
  });

  it("matches a job carrying all of the wanted labels", () => {
    expect(hasLabels({ team: "ops", env: "prod" }, { team: "ops" })).toBe(true);
    expect(hasLabels({ team: "ops" }, { team: "ops", env: "prod" })).toBe(false);
    expect(hasLabels({ team: "web" }, { team: "ops" })).toBe(false);
    expect(hasLabels(null, { team: "ops" })).toBe(false);
    expect(hasLabels(null, null)).toBe(true);
    expect(normalizeLabels({})).toBeNull();
    expect(Object.keys(normalizeLabels({ b: "1", a: "2" })!)).toEqual(["a", "b"]);
  });

  it("collects repeated --label flags; cron edit's --label none clears them", () => {
    const parse = (mode: "add" | "edit", ...argv: string[]) => {
      const command = addJobFlags(new Command(mode).exitOverride().configureOutput({ writeErr: () => {} }), mode);
      command.parse(argv, { from: "user" });
      return jobBody(command.opts(), mode);
    };
    const required = ["--name", "n", "--agent", "a1", "--prompt", "p", "--every", "1h"];
    expect(parse("add", ...required, "--label", "team=ops", "--label", "env=prod")).toMatchObject({
      labels: { team: "ops", env: "prod" },
    });
    expect(parse("edit", "--label", "none")).toEqual({ labels: null });
    expect(() => parse("edit", "--label", "Team=ops")).toThrow(/label "Team"/);
    expect(() => parse("edit", "--label", "team")).toThrow(/key=value/);
  });

  it("reads a list query's label filter and names a bad one", () => {
    expect(jobsQuery.parse({ label: "team=ops,env=prod" }).label).toBe("team=ops,env=prod");
    expect(parseLabelList("team=ops,env=prod")).toEqual({ team: "ops", env: "prod" });
    const bad = jobsQuery.safeParse({ label: "team" });
    expect(bad.error?.issues[0]?.message).toMatch(/key=value/);
  });

  it("sees a jobs file's labels as unchanged when only their order differs", () => {
    const changes = diffDefinitions({ labels: { a: "1", b: "2" } }, { labels: { a: "1", b: "2" } });
    expect(changes.filter((c) => c.field === "labels")).toEqual([]);
    const changed = diffDefinitions({ labels: { a: "1" } }, { labels: { a: "2" } });
    expect(changed.filter((c) => c.field === "labels")).toHaveLength(1);
  });
});
