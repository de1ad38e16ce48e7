import { randomUUID } from "node:crypto";
import type { PgBoss } from "pg-boss";
import { enqueue, MISSIONS_QUEUE } from "../db/boss.ts";
import { onLane, type Places } from "../delivery/direct.ts";
import type { Tx } from "../db/client.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import type { CronMission } from "../executors/types.ts";
import { reserveRunIds, startRuns } from "./attempt-queries.ts";
import { runMoment } from "./claim-plan.ts";
import type { IdentifiedRun, NewRun } from "./queries.ts";
import { handOffInClaim } from "../scheduler/hand-off.ts";
import { claimPrompts, type ClaimPrompt } from "./template-claim.ts";

/**
 * A run's fields for its log lines, given on each line: a child logger serializes them for every
 * run, logged or not (about 1.6 µs a run in a 10,000-slot burst, whose chains passed in 283–288 ms
 * after its slot instead of 313–330).
 */
export const runFields = (cronJobId: bigint | string, runId: bigint | string) => ({
  cronJobId: String(cronJobId),
  runId: String(runId),
});

/** A run whose chain passed, on its way to its agent. */
export interface PendingHandOff {
  runId: bigint;
  mission: CronMission;
  missionJobId: string;
  startedAt: Date;
}

/**
 * What the agent receives for a run of `job`: the prompt as the chain left it. A slot claimed ahead
 * starts at its own (jittered) moment, not before.
 */
export function handOffFor(
  job: CronJobRow,
  run: Pick<CronJobRunRow, "id" | "scheduledFor" | "trigger" | "latenessMs" | "backfilled">,
  prompt: string,
  now: Date,
): PendingHandOff {
  const startsAt = new Date(Math.max(now.getTime(), runMoment(job, run)));
  const sessionId = job.sessionMode === "fixed" && job.sessionId ? job.sessionId : `cron-${job.id}-${run.id}`;
  const mission: CronMission = {
    kind: "cron",
    runId: String(run.id),
    cronJobId: String(job.id),
    jobName: job.name,
    jobKind: job.kind,
    agentId: job.agentId,
    sessionId,
    prompt,
    scheduledFor: run.scheduledFor.toISOString(),
    firedAt: startsAt.toISOString(),
    latenessMs: Math.max(0, run.latenessMs ?? 0),
    backfilled: run.backfilled,
  };
  return { runId: run.id, mission, missionJobId: randomUUID(), startedAt: startsAt };
}

/**
 * In `tx`: the runs still Claimed go Running and their missions into pg-boss or onto this
 * instance's direct lane, so there is no Running row without its mission and no mission for a row
 * that is not Running. The first `places.started` of them start on the lane (attempt counted), the
 * next `places.queued` queue on it (attempt counted when it takes its turn), both with no pg-boss
 * job; resolves to those, to start once `tx` has committed.
 */
export async function writeHandOffs(
  tx: Tx,
  boss: PgBoss,
  batch: readonly PendingHandOff[],
  places: Places,
): Promise<{ id: string; data: CronMission; counted: boolean }[]> {
  const started = await startRuns(
    tx,
    batch.map((h, i) => ({
      id: h.runId,
      scheduledFor: new Date(h.mission.scheduledFor),
      promptFired: h.mission.prompt,
      startedAt: h.startedAt,
      sessionId: h.mission.sessionId,
      ...heldBy(places, i, h.missionJobId),
      direct: i < places.started,
    })),
  );
  return enqueueHandOffs(tx, boss, batch, places, started);
}

/**
 * Who holds item `i` of a hand-off given `places`: one on this instance's direct lane has no pg-boss
 * job, its row (Running, `lane_owner` this incarnation) is its record; the others have their job.
 */
function heldBy(places: Places, i: number, missionJobId: string) {
  return onLane(places, i).direct && places.owner
    ? { missionJobId: null, laneOwner: places.owner }
    : { missionJobId, laneOwner: null };
}

/**
 * The missions of the hand-offs whose runs went Running (`running`: their ids) into pg-boss, except
 * those on this instance's direct lane (no job: their row is their record, `heldBy`). Resolves to
 * the lane's, to start once `tx` has committed, each keyed by the job id it will have if it is
 * ever handed to pg-boss.
 */
export async function enqueueHandOffs(
  tx: Tx,
  boss: PgBoss,
  batch: readonly PendingHandOff[],
  places: Places,
  running: ReadonlySet<string>,
): Promise<{ id: string; data: CronMission; counted: boolean; jobless: boolean }[]> {
  const jobs = batch
    .map((h, i) => ({
      id: h.missionJobId,
      data: h.mission,
      ...onLane(places, i),
      jobless: heldBy(places, i, h.missionJobId).missionJobId === null,
      runId: String(h.runId),
    }))
    .filter((j) => running.has(j.runId));
  await enqueue(
    boss,
    tx,
    MISSIONS_QUEUE,
    jobs.filter((j) => !j.jobless),
  );
  return jobs.filter((j) => j.direct);
}

/**
 * The claimed runs a claim hands off itself (inserted Running, their only write before their close),
 * with the prompts of those whose template it rendered. A run that needs approval waits for it after
 * its chain, and a job with a preflight waits for its command's answer: neither is handed off in the
 * claim. A slot further ahead than `withinMs` (a burst's early groups) is `ahead`: the claim may put
 * it in the direct lane's queue, its attempt counted only when it takes its turn at its moment, so a
 * crash before then delivers it rather than closing it Unknown; where the lane has no room it stays
 * Claimed and is handed off at its moment. A template whose values could change before its moment is
 * rendered then (template-claim.ts): such a run is not handed off ahead.
 */
export async function handingInClaim(
  tx: Tx,
  rows: readonly NewRun[],
  jobOf: (run: NewRun) => CronJobRow,
  now: number,
  withinMs: number | undefined,
): Promise<{ handing: Set<NewRun>; ahead: Set<NewRun>; prompts: Map<NewRun, ClaimPrompt> }> {
  const soon: NewRun[] = [];
  const ahead = new Set<NewRun>();
  for (const run of rows) {
    const job = jobOf(run);
    if (run.status !== "Claimed" || job.approval || job.preflight) continue;
    const moment = runMoment(job, { scheduledFor: run.scheduledFor, trigger: run.trigger ?? "schedule" });
    if (handOffInClaim(moment, now, withinMs)) soon.push(run);
    else if (!job.promptTemplate) ahead.add(run);
  }
  const templates = soon.filter((run) => jobOf(run).promptTemplate);
  const prompts = await claimPrompts(tx, rows, templates, jobOf);
  return { handing: new Set(soon.filter((run) => !jobOf(run).promptTemplate || prompts.has(run))), ahead, prompts };
}

/**
 * The order a claim hands its runs off in, which is the order they take the lane's places: those in
 * `handing` first, then those `ahead` that fall in the lane's queue (never a place that counts the
 * attempt now, nor a pg-boss job, which the fetch would count before the moment).
 */
function handOffOrder(
  rows: readonly NewRun[],
  handing: ReadonlySet<NewRun>,
  ahead: ReadonlySet<NewRun>,
  places: Places,
): NewRun[] {
  const order = rows.filter((row) => handing.has(row));
  for (const row of rows)
    if (ahead.has(row) && order.length >= places.started && order.length < places.started + places.queued)
      order.push(row);
  return order;
}

/**
 * A claim's rows, those it hands off (handOffOrder) written Running as writeHandOffs would leave them
 * (the first `places.started` with their attempt counted), so the claim's insert is their only write:
 * ids are reserved for the batch, since a run's session (and a template's `run.id`) is named after
 * its id. A run's prompt is its rendered template's in `prompts`, otherwise the job's.
 */
export async function runningInClaim(
  tx: Tx,
  rows: readonly NewRun[],
  handing: ReadonlySet<NewRun>,
  jobOf: (row: NewRun) => CronJobRow,
  places: Places,
  at: Date,
  prompts: ReadonlyMap<NewRun, ClaimPrompt> = new Map(),
  ahead: ReadonlySet<NewRun> = new Set(),
): Promise<{ rows: readonly (NewRun | IdentifiedRun)[]; handOffs: PendingHandOff[] }> {
  const order = handOffOrder(rows, handing, ahead, places);
  if (order.length === 0) return { rows, handOffs: [] };
  const ids = await reserveRunIds(tx, rows.length);
  const idOf = new Map(rows.map((row, i) => [row, ids[i]!]));
  const handOffs = order.map((row) => {
    const id = idOf.get(row)!;
    const run = {
      id,
      scheduledFor: row.scheduledFor,
      trigger: row.trigger ?? "schedule",
      latenessMs: row.latenessMs ?? null,
      backfilled: !!row.backfilled,
    };
    return handOffFor(jobOf(row), run, prompts.get(row)?.(id) ?? jobOf(row).prompt, at);
  });
  const place = new Map(order.map((row, n) => [row, n]));
  const identified = rows.map((row): IdentifiedRun => {
    const id = idOf.get(row)!;
    const n = place.get(row);
    if (n === undefined) return { ...row, id };
    const h = handOffs[n]!;
    return {
      ...row,
      id,
      status: "Running",
      promptFired: h.mission.prompt,
      startedAt: h.startedAt,
      sessionId: h.mission.sessionId,
      ...heldBy(places, n, h.missionJobId),
      attempts: onLane(places, n).counted ? 1 : 0,
    };
  });
  return { rows: identified, handOffs };
}
