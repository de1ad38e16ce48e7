import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { rows } from "../../src/db/client.ts";
import { findJob, findRun } from "../../src/cron/queries.ts";
import { promptFor } from "../../src/cron/template-values.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * A template job's scheduled slots, with no plugin on cronJobFiring, are rendered and handed off in
 * their claim like a plain job's, with the values their chain would have read; a slot whose job's
 * previous run is still going is left to its chain, which renders it at its moment.
 */
const t = daemonPerTest();

interface Run {
  id: string;
  scheduled_for: Date | string;
  status: string;
  prompt_fired: string | null;
  /** Started in the claim's own transaction: the claim's instant is its start. */
  with_claim: boolean;
  /** The job's run of the slot before, closed before this one was claimed (ms between, null when none). */
  previous_closed_ms: number | null;
}

const ledger = (daemon: Daemon, jobId: string) =>
  rows<Run>(
    daemon.services.database.db,
    sql`select r.id::text, r.scheduled_for, r.status, r.prompt_fired,
               coalesce(r.started_at = r.claimed_at, false) as with_claim,
               extract(epoch from (r.claimed_at - p.finished_at)) * 1000 as previous_closed_ms
        from cron_job_runs r
        left join lateral (select finished_at from cron_job_runs p where p.cron_job_id = r.cron_job_id
                           and p.scheduled_for < r.scheduled_for order by p.scheduled_for desc limit 1) p on true
        where r.cron_job_id = ${jobId}::bigint order by r.scheduled_for`,
  );

let server: Server | null = null;
/** A webhook agent that records each prompt and answers after `delayMs(n)` for the n-th call. */
async function agent(delayMs: (n: number) => number): Promise<{ url: string; prompts: string[] }> {
  const prompts: string[] = [];
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      prompts.push((JSON.parse(body) as { prompt: string }).prompt);
      setTimeout(() => res.writeHead(200).end(`answer ${prompts.length}`), delayMs(prompts.length));
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, prompts };
}

afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(null)));
  server = null;
});

const TEMPLATE =
  "{{trigger}} run {{run.id}} of {{job.name}} at {{slot}} ({{slot_local}}, attempt {{attempt}}): {{#previous}}after {{id}} {{status}} with {{output}}{{/previous}}{{^previous}}first{{/previous}}";

describe(`templates rendered in the claim (${backendName})`, () => {
  it("hands a scheduled template slot off in its claim, with the prompt its chain would have rendered", async () => {
    const { url, prompts } = await agent(() => 0);
    const daemon = await t.start({
      toml: `[scheduler]\nclaim_ahead = "0"\n\n[agents.hooked]\nexecutor = "webhook"\nurl = "${url}"\n`,
    });
    const job = await daemon.services.cron.add({
      name: "ticker",
      agentId: "hooked",
      cron: "* * * * * *",
      timezone: "Asia/Kolkata",
      promptTemplate: true,
      prompt: TEMPLATE,
    });
    const runs = await waitFor(
      async () => {
        const found = (await ledger(daemon, job.id)).filter((r) => r.status === "Succeeded");
        return found.length >= 4 ? found : undefined;
      },
      "four Succeeded runs",
      20_000,
    );
    await daemon.services.cron.pause(job.id, {});
    // Each run whose previous one had closed well before its claim was rendered and handed off in
    // the claim (on a loaded machine a previous run may still be closing: its next goes by its chain).
    const settled = runs.filter((r) => r.previous_closed_ms === null || Number(r.previous_closed_ms) > 100);
    expect(settled.length).toBeGreaterThanOrEqual(2);
    expect(settled.map((r) => [r.id, r.with_claim])).toEqual(settled.map((r) => [r.id, true]));
    const db = daemon.services.database.db;
    const jobRow = (await findJob(db, BigInt(job.id)))!;
    for (const r of runs) {
      // The values are those the run's chain reads at its moment (its previous run is closed and stays so).
      const expected = await promptFor(db, jobRow, (await findRun(db, BigInt(r.id)))!);
      expect(r.prompt_fired).toBe(expected);
      expect(prompts).toContain(expected);
    }
    expect(runs[1]!.prompt_fired).toBe(
      `schedule run ${runs[1]!.id} of ticker at ${new Date(runs[1]!.scheduled_for).toISOString()} (${new Date(
        new Date(runs[1]!.scheduled_for).getTime() + 5.5 * 3_600_000,
      )
        .toISOString()
        .replace("Z", "+05:30")}, attempt 1): after ${runs[0]!.id} Succeeded with answer 1`,
    );
  });

  it("leaves a slot whose previous run is still going to its chain, which renders it at its moment", async () => {
    // The first call is answered after 1.6 s: the second slot is claimed while the first runs.
    const { url, prompts } = await agent((n) => (n === 1 ? 1_600 : 0));
    const daemon = await t.start({
      toml: `[scheduler]\nclaim_ahead = "0"\n\n[agents.hooked]\nexecutor = "webhook"\nurl = "${url}"\n`,
    });
    const job = await daemon.services.cron.add({
      name: "slow",
      agentId: "hooked",
      cron: "* * * * * *",
      overlapPolicy: "allow",
      promptTemplate: true,
      prompt: TEMPLATE,
    });
    const runs = await waitFor(
      async () => {
        const found = await ledger(daemon, job.id);
        return found.length >= 2 && found.slice(0, 2).every((r) => r.status === "Succeeded") ? found : undefined;
      },
      "the first two runs closed",
      20_000,
    );
    await daemon.services.cron.pause(job.id, {});
    const [first, second] = runs;
    expect(second!.with_claim).toBe(false);
    // At the second slot's moment the first run was still going: no previous run to show.
    expect(second!.prompt_fired).toMatch(/: first$/);
    expect(prompts).toContain(second!.prompt_fired);
    expect(first!.prompt_fired).toMatch(/: first$/);
  });
});
