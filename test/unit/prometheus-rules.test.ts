import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { packagePath } from "../../src/paths.ts";
import { prerequisite } from "../helpers/prerequisite.ts";

const RULES = packagePath("deploy/prometheus/missiond.rules.yml");
const promtool = spawnSync("sh", ["-c", "command -v promtool"], { encoding: "utf8" }).stdout.trim();
const missing = prerequisite(promtool ? null : "promtool (Debian package prometheus)");

describe("the Prometheus rules shipped in deploy/", () => {
  it.skipIf(missing)(`pass promtool check rules${missing ? ` (skipped: no ${missing})` : ""}`, () => {
    const checked = spawnSync(promtool, ["check", "rules", RULES], { encoding: "utf8" });
    expect(checked.stderr + checked.stdout).toMatch(/SUCCESS: 6 rules found/);
    expect(checked.status).toBe(0);
  });

  it("name only series the daemon exports", () => {
    const text = readFileSync(RULES, "utf8");
    const metrics = readFileSync(packagePath("src/metrics.ts"), "utf8");
    const used = new Set(text.match(/missiond_[a-z_]+/g));
    for (const name of used) expect(metrics, `${name} in src/metrics.ts`).toContain(`"${name}"`);
    expect(used).toContain("missiond_job_last_success_timestamp_seconds");
    expect(used).toContain("missiond_job_consecutive_failures");
    expect(used).toContain("missiond_job_runs_total");
  });
});
