import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { apiClient, ApiError } from "../../src/cli/client.ts";
import type { JobView } from "../../src/cron/views.ts";
import { httpReceiver } from "../helpers/alert-receivers.ts";
import { cli } from "../helpers/cli.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const names = (jobs: JobView[]) => jobs.map((j) => j.name).sort();

describe(`job labels (${backendName})`, () => {
  it("are set by cron add and edit, listed by label, and refused naming the bad label", async () => {
    const daemon = await t.start();
    const add = (name: string, ...labels: string[]) =>
      cli(daemon, "cron", "add", "--name", name, "--agent", "a1", "--prompt", "p", "--every", "1h", ...labels);
    expect((await add("billing", "--label", "team=ops", "--label", "env=prod")).code).toBe(0);
    expect((await add("reports", "--label", "team=ops")).code).toBe(0);
    expect((await add("site", "--label", "team=web")).code).toBe(0);
    const ls = async (...labels: string[]) => {
      const out = await cli(daemon, "cron", "ls", "--json", ...labels);
      expect(out.code, out.stderr).toBe(0);
      return names(JSON.parse(out.stdout) as JobView[]);
    };
    expect(await ls("--label", "team=ops")).toEqual(["billing", "reports"]);
    expect(await ls("--label", "team=ops", "--label", "env=prod")).toEqual(["billing"]);
    expect(await ls()).toEqual(["billing", "reports", "site"]);

    const api = apiClient({ socketPath: daemon.config.socketPath });
    const listed = await api.get<{ jobs: JobView[] }>("/v1/cron-jobs", { label: "team=web" });
    expect(names(listed.jobs)).toEqual(["site"]);
    const billing = (await api.get<{ jobs: JobView[] }>("/v1/cron-jobs", { label: "env=prod" })).jobs[0]!;
    expect(billing.labels).toEqual({ env: "prod", team: "ops" });

    // cron edit replaces the labels; "none" removes them.
    const all = (await api.get<{ jobs: JobView[] }>("/v1/cron-jobs")).jobs;
    const id = (name: string) => all.find((j) => j.name === name)!.id;
    expect((await cli(daemon, "cron", "edit", id("site"), "--label", "team=ops")).code).toBe(0);
    expect(await ls("--label", "team=ops")).toEqual(["billing", "reports", "site"]);
    expect((await cli(daemon, "cron", "edit", id("reports"), "--label", "none")).code).toBe(0);
    expect(await ls("--label", "team=ops")).toEqual(["billing", "site"]);

    const bad = await cli(daemon, "cron", "edit", id("site"), "--label", "Team=ops");
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/label "Team": the key must be/);
    const refused = await api.patch(`/v1/cron-jobs/${billing.id}`, { labels: { "no way": "x" } }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).message).toMatch(/label "no way"/);
    expect((await daemon.services.cron.get(billing.id)).labels).toEqual({ env: "prod", team: "ops" });
  });

  it("sends a job's alert only to the routes whose labels the job carries", async () => {
    const ops = await httpReceiver();
    const web = await httpReceiver();
    const all = await httpReceiver();
    closers.push(ops.close, web.close, all.close);
    const flag = join(tempDir("labels"), "never");
    const toml =
      `[missions]\nretry_limit = 0\n[alerts]\ninterval = "100ms"\nretry_base = "50ms"\nmissed = false\n` +
      `[agents.broken]\nexecutor = "command"\nargv = ["sh", "-c", "test -e '${flag}'"]\ntimeout = "5s"\n` +
      `[[alerts.routes]]\nname = "ops"\ntype = "webhook"\nurl = "${ops.url}"\nlabels = { team = "ops" }\n` +
      `[[alerts.routes]]\nname = "web"\ntype = "webhook"\nurl = "${web.url}"\nlabels = { team = "web" }\n` +
      `[[alerts.routes]]\nname = "all"\ntype = "webhook"\nurl = "${all.url}"\n`;
    const daemon = await t.start({ toml });
    const job = await daemon.services.cron.add({
      name: "billing",
      agentId: "broken",
      cron: "* * * * * *",
      prompt: "p",
      alertFailures: 1,
      labels: { team: "ops", env: "prod" },
    });
    await waitFor(() => ops.got.length && all.got.length, "the failing alert at the ops and catch-all routes");
    await daemon.services.cron.pause(job.id);
    await daemon.services.alerts.pass();
    expect(ops.got[0]!.body).toMatchObject({ event: "opened", alert: { kind: "failing", jobName: "billing" } });
    // Queued at opening to the routes that take it: the web route never had it.
    const { alerts } = await daemon.services.alerts.list({});
    expect(alerts.map((a) => a.notifications.map((n) => n.route).sort())).toEqual([["all", "ops"]]);
    expect(web.got).toEqual([]);
    writeFileSync(flag, "");
  });
});
