import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../../src/clock.ts";
import type { RunView } from "../../src/cron/views.ts";
import { rows } from "../../src/db/client.ts";
import { cli } from "../helpers/cli.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { holdingAgent } from "../helpers/holding-agent.ts";
import { freePort } from "../helpers/net.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * An event's run through a real daemon, its TCP API and trigger tokens: its Idempotency-Key dedupes
 * for a window (`[retention] idempotency_keys`) and is pruned after it; the token reads one run of
 * its own job; the job's overlap policy holds events as it holds slots.
 */
const t = daemonPerTest();
const OPERATOR = "operator-token-for-event-runs";
const HOUR = 3_600_000;

/** The system's clock, moved forward by `shift.ms` (timers still run in real time). */
function shiftedClock(): Clock & { shift: { ms: number } } {
  const shift = { ms: 0 };
  return { ...systemClock, now: () => Date.now() + shift.ms, shift };
}

let agent: Awaited<ReturnType<typeof holdingAgent>> | null = null;
afterEach(async () => {
  await agent?.close();
  agent = null;
});

async function setUp(options: { toml?: string; clock?: Clock; fields?: Record<string, unknown> } = {}) {
  agent = await holdingAgent(false);
  const port = await freePort();
  const api = `http://127.0.0.1:${port}`;
  const daemon = await t.start({
    toml: `[agents.ci]\nexecutor = "webhook"\nurl = "${agent.url}"\ntimeout = "20s"\n${options.toml ?? ""}`,
    env: { MISSIOND_LISTEN: `127.0.0.1:${port}`, MISSIOND_API_TOKEN: OPERATOR },
    clock: options.clock,
  });
  const addJob = async (name: string, fields: Record<string, unknown> = {}) => {
    const job = await daemon.services.cron.add({ name, agentId: "ci", eventsOnly: true, prompt: "go", ...fields });
    const created = await cli(daemon, "--json", "cron", "token", "create", job.id);
    expect(created.stderr).toBe("");
    return { id: job.id, token: (JSON.parse(created.stdout) as { token: string }).token };
  };
  const call = (path: string, token: string, init: { method?: string; key?: string } = {}) =>
    fetch(`${api}${path}`, {
      method: init.method ?? "GET",
      headers: {
        authorization: `Bearer ${token}`,
        ...(init.method === "POST" ? { "content-type": "application/json" } : {}),
        ...(init.key ? { "idempotency-key": init.key } : {}),
      },
      body: init.method === "POST" ? "{}" : undefined,
    });
  const fire = async (job: { id: string; token: string }, key?: string) => {
    const answer = await call(`/v1/cron-jobs/${job.id}/trigger`, job.token, { method: "POST", key });
    return { status: answer.status, run: (await answer.json()) as RunView };
  };
  const closed = (id: string) =>
    waitFor(
      async () => {
        const run = await daemon.services.cron.run(id);
        return ["Claimed", "Running"].includes(run.status) ? undefined : run;
      },
      `run ${id} to close`,
      20_000,
    );
  return { daemon, addJob, call, fire, closed, agent };
}

describe(`event runs: key window, a token's run read, overlap (${backendName})`, () => {
  it("answers a repeated Idempotency-Key with the first run within its window, and with a new run after it", async () => {
    const clock = shiftedClock();
    const { daemon, addJob, fire, closed } = await setUp({ clock, toml: `[retention]\nidempotency_keys = "1h"\n` });
    const job = await addJob("deploy");
    const first = await fire(job, "build-7");
    expect(first.status).toBe(201);
    await closed(first.run.id);
    clock.shift.ms = 59 * 60_000;
    const within = await fire(job, "build-7");
    expect([within.status, within.run.id]).toEqual([200, first.run.id]);

    clock.shift.ms = HOUR + 60_000;
    const after = await fire(job, "build-7");
    expect(after.status).toBe(201);
    expect(after.run.id).not.toBe(first.run.id);
    await closed(after.run.id);
    // The key now answers the new run, for a window of its own.
    const again = await fire(job, "build-7");
    expect([again.status, again.run.id]).toEqual([200, after.run.id]);
    const runs = await daemon.services.cron.runs({ jobId: job.id, limit: 10 });
    expect(runs.map((r) => r.id).sort()).toEqual([first.run.id, after.run.id].sort());
  });

  it("prunes keys past `idempotency_keys` and keeps the ones within it", async () => {
    const clock = shiftedClock();
    const { daemon, addJob, fire, closed } = await setUp({ clock, toml: `[retention]\nidempotency_keys = "1h"\n` });
    const job = await addJob("deploy");
    await closed((await fire(job, "old")).run.id);
    clock.shift.ms = 2 * HOUR;
    await closed((await fire(job, "new")).run.id);
    const result = await daemon.services.pruner.runPass();
    expect(result.pruned.idempotency_keys).toBe(1);
    const left = await rows<{ key: string }>(
      daemon.services.database.db,
      sql`select key from cron_job_trigger_keys order by key`,
    );
    expect(left.map((r) => r.key)).toEqual(["new"]);
  });

  it("lets a trigger token read one run of its own job; another job's run answers 404 as an unknown one", async () => {
    const { addJob, call, fire, closed } = await setUp();
    const mine = await addJob("mine");
    const theirs = await addJob("theirs");
    const own = (await fire(mine)).run;
    const other = (await fire(theirs)).run;
    await closed(own.id);
    await closed(other.id);

    const read = await call(`/v1/runs/${own.id}`, mine.token);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id: own.id, cronJobId: mine.id, trigger: "event", status: "Succeeded" });
    const refused = await call(`/v1/runs/${other.id}`, mine.token);
    const unknown = await call(`/v1/runs/999999999`, mine.token);
    expect([refused.status, unknown.status]).toEqual([404, 404]);
    expect((await refused.json()) as unknown).toEqual({
      error: { code: "NOT_FOUND", message: `no run with id "${other.id}"` },
    });
    // The operator reads either.
    expect((await call(`/v1/runs/${other.id}`, OPERATOR)).status).toBe(200);
    // Nothing else opens to the token.
    expect((await call(`/v1/runs`, mine.token)).status).toBe(403);
    expect((await call(`/v1/runs/${own.id}/approve`, mine.token, { method: "POST" })).status).toBe(403);
    expect((await call(`/v1/cron-jobs/${mine.id}`, mine.token)).status).toBe(403);
  });

  it("skips an event while the job's run is open under overlap skip, naming the open run", async () => {
    const { addJob, fire, closed, agent } = await setUp();
    const job = await addJob("build", { overlapPolicy: "skip" });
    agent.state.holding = true;
    const first = (await fire(job)).run;
    await waitFor(() => agent.runIds().includes(first.id), "the first mission at the agent");
    const second = await fire(job);
    expect(second.status).toBe(201);
    expect(second.run).toMatchObject({ trigger: "event", status: "Skipped" });
    expect(second.run.reason).toMatch(new RegExp(`^overlap: run ${first.id} \\(slot .+\\) is still Running$`));
    agent.answerAll();
    await closed(first.id);
    expect(agent.runIds()).toEqual([first.id]);
  });

  it("holds an event Deferred under buffer_one, cancels the open run under cancel_previous, and runs both under allow", async () => {
    const { daemon, addJob, fire, closed, agent } = await setUp();
    agent.state.holding = true;
    const buffering = await addJob("buffering", { overlapPolicy: "buffer_one" });
    const busy = (await fire(buffering)).run;
    await waitFor(() => agent.runIds().includes(busy.id), "the buffering job's mission at the agent");
    const held = (await fire(buffering)).run;
    expect(held).toMatchObject({ status: "Deferred", reason: `buffer_one: waits for run ${busy.id} to end` });
    expect((await fire(buffering)).run.reason).toMatch(/and a slot is already buffered behind it$/);

    const replacing = await addJob("replacing", { overlapPolicy: "cancel_previous" });
    const old = (await fire(replacing)).run;
    await waitFor(() => agent.runIds().includes(old.id), "the replacing job's mission at the agent");
    const fresh = (await fire(replacing)).run;
    expect(fresh.status).toBe("Claimed");
    expect(await daemon.services.cron.run(old.id)).toMatchObject({
      status: "Cancelled",
      reason: `cancelled by the event run ${fresh.id} (overlap policy cancel_previous)`,
    });

    const parallel = await addJob("parallel", { overlapPolicy: "allow" });
    const one = (await fire(parallel)).run;
    const two = (await fire(parallel)).run;
    await waitFor(() => [one.id, two.id].every((id) => agent.runIds().includes(id)), "both missions at the agent");

    // The buffered event runs once the run before it ends.
    agent.state.holding = false;
    agent.answerAll();
    await closed(busy.id);
    const continued = await waitFor(
      async () =>
        (await daemon.services.cron.runs({ jobId: buffering.id, limit: 10 })).find((r) => r.trigger === "deferred"),
      "the buffered event's continuation",
    );
    await waitFor(() => agent.runIds().includes(continued.id), "the continuation at the agent");
  });

  it("keeps an operator's manual trigger outside the overlap policy", async () => {
    const { daemon, addJob, fire, agent } = await setUp();
    const job = await addJob("build", { overlapPolicy: "skip" });
    agent.state.holding = true;
    const first = (await fire(job)).run;
    await waitFor(() => agent.runIds().includes(first.id), "the event's mission at the agent");
    const manual = await daemon.services.cron.trigger(job.id);
    expect(manual).toMatchObject({ trigger: "manual", status: "Claimed" });
    await waitFor(() => agent.runIds().includes(manual.id), "the manual run's mission at the agent");
  });
});
