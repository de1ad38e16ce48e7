import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { RunView } from "../../src/cron/views.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { waitFor } from "../helpers/wait.ts";

const AGENT_SH = fileURLToPath(new URL("../fixtures/executors/agent.sh", import.meta.url));
const t = daemonPerTest();

/** A job due every second whose mission (a real child process) takes 2.5 s: it always overlaps. */
async function overlapping(policy: "skip" | "allow" | "buffer_one" | "cancel_previous") {
  const daemon = await t.start({
    toml: `[agents.napper]\nexecutor = "command"\nargv = ["${AGENT_SH}"]\ntimeout = "10s"\n`,
  });
  const job = await daemon.services.cron.add({
    name: `nap-${policy}`,
    agentId: "napper",
    cron: "* * * * * *",
    prompt: "NAP",
    overlapPolicy: policy,
  });
  return { daemon, job };
}
const runs = async (daemon: Daemon, jobId: string): Promise<RunView[]> =>
  (await daemon.services.cron.runs({ jobId, limit: 100 })).reverse();

describe(`overlap policies with a mission that outlasts its interval (${backendName})`, () => {
  it("skip: slots during a run are Skipped, naming the run, and no two runs overlap", async () => {
    const { daemon, job } = await overlapping("skip");
    const all = await waitFor(
      async () => {
        const list = await runs(daemon, job.id);
        return list.filter((r) => r.status === "Succeeded").length >= 2 ? list : null;
      },
      "two runs",
      20_000,
    );
    const skipped = all.filter((r) => r.status === "Skipped");
    expect(skipped.length).toBeGreaterThanOrEqual(1);
    expect(skipped[0]!.reason).toMatch(/^overlap: run \d+ \(slot .*\) is still (Running|Claimed)$/);
    const ran = all.filter((r) => r.status === "Succeeded");
    expect(Date.parse(ran[1]!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(ran[0]!.finishedAt!));
  });

  it("allow: a new run starts while the previous one is still running", async () => {
    const { daemon, job } = await overlapping("allow");
    const all = await waitFor(
      async () => {
        const list = await runs(daemon, job.id);
        return list.filter((r) => r.status === "Succeeded").length >= 2 ? list : null;
      },
      "two runs",
      20_000,
    );
    const [a, b] = all.filter((r) => r.status === "Succeeded");
    expect(Date.parse(b!.startedAt!)).toBeLessThan(Date.parse(a!.finishedAt!));
    expect(all.filter((r) => r.status === "Skipped")).toEqual([]);
  });

  it("buffer_one: one slot waits for the run to end and then runs; further slots are Skipped", async () => {
    const { daemon, job } = await overlapping("buffer_one");
    const all = await waitFor(
      async () => {
        const list = await runs(daemon, job.id);
        return list.some((r) => r.trigger === "deferred" && r.status === "Succeeded") ? list : null;
      },
      "the buffered slot to run",
      25_000,
    );
    const first = all.find((r) => r.status === "Succeeded" && r.trigger === "schedule")!;
    const buffered = all.find((r) => r.status === "Deferred")!;
    expect(buffered.reason).toBe(`buffer_one: waits for run ${first.id} to end`);
    const released = all.find((r) => r.trigger === "deferred" && r.status === "Succeeded")!;
    expect(Date.parse(released.startedAt!)).toBeGreaterThanOrEqual(Date.parse(first.finishedAt!));
    expect(
      all.some((r) => r.status === "Skipped" && /a slot is already buffered behind it$/.test(r.reason ?? "")),
    ).toBe(true);
  });

  it("cancel_previous: the running mission is stopped and its run ends Cancelled; the new slot runs", async () => {
    const { daemon, job } = await overlapping("cancel_previous");
    const all = await waitFor(
      async () => {
        const list = await runs(daemon, job.id);
        return list.some((r) => r.status === "Cancelled") &&
          list.some((r) => r.status === "Running" || r.status === "Succeeded")
          ? list
          : null;
      },
      "a replaced run",
      20_000,
    );
    const cancelled = all.find((r) => r.status === "Cancelled")!;
    expect(cancelled.reason).toMatch(/^cancelled by the slot .* \(overlap policy cancel_previous\)$/);
    // It was stopped, not left to finish: the 2.5 s mission did not run to its end.
    expect(Date.parse(cancelled.finishedAt!) - Date.parse(cancelled.startedAt ?? cancelled.claimedAt!)).toBeLessThan(
      2_000,
    );
  });
});

describe(`heartbeats (${backendName})`, () => {
  it("acknowledges HEARTBEAT_OK quietly and skips beats while the agent is busy with another mission", async () => {
    const { daemon, job: long } = await overlapping("allow"); // the napper agent is kept busy, 2.5 s per mission
    const beat = await daemon.services.cron.add({
      name: "pulse",
      agentId: "napper",
      kind: "heartbeat",
      every: "1s",
      prompt: "PULSE",
      skipIfBusy: true,
    });
    const beats = await waitFor(
      async () => {
        const list = await runs(daemon, beat.id);
        return list.some((r) => r.status === "Skipped") ? list : null;
      },
      "a skipped beat",
      15_000,
    );
    expect(beats.find((r) => r.status === "Skipped")!.reason).toMatch(
      /^busy: the agent's session cron-\d+-\d+ is running run \d+$/,
    );
    await daemon.services.cron.remove(long.id);
    const acked = await waitFor(
      async () => (await runs(daemon, beat.id)).find((r) => r.status === "Succeeded"),
      "an acknowledged beat",
      20_000,
    );
    expect(acked).toMatchObject({ reason: "acknowledged: HEARTBEAT_OK", output: "nothing to do\nHEARTBEAT_OK\n" });
  });
});
