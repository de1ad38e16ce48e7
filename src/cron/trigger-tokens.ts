import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import type { Clock } from "../clock.ts";
import type { Db, Executor } from "../db/client.ts";
import type { CronJobRow, CronJobTokenRow } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import { validate } from "../validation.ts";
import { insertToken, liveTokens, revokeToken, tokenByHash, touchToken } from "./event-queries.ts";
import { lockJobs } from "./queries.ts";
import { recordRevision, type Actor } from "./revisions.ts";

/**
 * Trigger tokens: each can fire one job (a run with trigger `event`) and read that job's runs (its
 * list and each one), nothing else. What a webhook sender outside the host holds (a CI system, a mail hook), so that
 * giving it a token does not give it the operator's API. Only the token's SHA-256 is stored: the
 * value is shown once, when it is made.
 */

/** What every trigger token starts with: the API tells it from a configured token by this. */
export const TRIGGER_TOKEN_PREFIX = "mdt_";
/** How much of a token `cron token ls` shows (the prefix and a few characters: enough to tell two apart). */
const SHOWN_CHARS = TRIGGER_TOKEN_PREFIX.length + 6;
/** The most bytes an event's JSON body may have: it is stored on the run and rendered into a prompt. */
export const MAX_PAYLOAD_BYTES = 64 * 1024;

export const tokenName = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9._-]+$/, "letters, digits, dot, dash and underscore only");

export const createTokenInput = z.object({ name: tokenName.default("default") }).strict();

/** `Idempotency-Key`: printable, as HTTP header values are. */
export const idempotencyKey = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, "printable characters without spaces");

/** An event's body: any JSON object (strings without NUL, which Postgres cannot store). */
export const payloadObject = z.record(z.string(), z.unknown());

/** A token's name as a path segment: any text, so that a name no token has answers 404. */
export const tokenNameParam = z.string().min(1).max(200);

const hashOf = (token: string) => createHash("sha256").update(token).digest("hex");

export function tokenView(row: CronJobTokenRow) {
  return {
    name: row.name,
    prefix: `${row.prefix}…`,
    createdAt: row.createdAt.toISOString(),
    createdBy: row.createdBy,
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
  };
}

export type TokenView = ReturnType<typeof tokenView>;

export interface TokenDeps {
  db: Db;
  clock: Clock;
}

/** In one transaction: lock the live job, make the change, record it in the job's revisions. */
async function withRevision<T>(
  deps: TokenDeps,
  jobId: bigint,
  actor: Actor,
  change: (
    tx: Executor,
    job: CronJobRow,
    now: Date,
  ) => Promise<{ result: T; action: "token_create" | "token_revoke"; note: string }>,
): Promise<T> {
  return deps.db.transaction(async (tx) => {
    const [job] = await lockJobs(tx, [jobId]);
    if (!job) throw new MissiondError("NOT_FOUND", `no cron job with id "${jobId}"`);
    const now = new Date(deps.clock.now());
    const { result, action, note } = await change(tx, job, now);
    await recordRevision(tx, { action, actor, at: now, note, before: job, after: job });
    return result;
  });
}

/** Makes a token for the job; its value is in the answer and nowhere else. */
export async function createToken(
  deps: TokenDeps,
  jobId: bigint,
  raw: unknown,
  actor: Actor,
): Promise<TokenView & { token: string }> {
  const { name } = validate(createTokenInput, raw ?? {});
  const token = `${TRIGGER_TOKEN_PREFIX}${randomBytes(24).toString("base64url")}`;
  return withRevision(deps, jobId, actor, async (tx, _job, now) => {
    const row = await insertToken(tx, {
      cronJobId: jobId,
      name,
      prefix: token.slice(0, SHOWN_CHARS),
      hash: hashOf(token),
      createdAt: now,
      createdBy: actor,
    });
    if (!row) throw new MissiondError("CONFLICT", `cron job ${jobId} already has a token named "${name}"`);
    return { result: { ...tokenView(row), token }, action: "token_create", note: `trigger token "${name}" created` };
  });
}

export async function listTokens(deps: TokenDeps, jobId: bigint): Promise<TokenView[]> {
  return (await liveTokens(deps.db, jobId)).map(tokenView);
}

/** Revokes the job's token of that name: calls with it are refused from now on. */
export async function removeToken(deps: TokenDeps, jobId: bigint, name: string, actor: Actor): Promise<void> {
  await withRevision(deps, jobId, actor, async (tx, _job, now) => {
    if (!(await revokeToken(tx, jobId, name, now)))
      throw new MissiondError("NOT_FOUND", `cron job ${jobId} has no token named "${name}"`);
    return { result: undefined, action: "token_revoke", note: `trigger token "${name}" revoked` };
  });
}

/** The job a presented token may trigger (and the token's name), or null when it is no live token. */
export async function tokenJob(deps: TokenDeps, token: string): Promise<{ jobId: string; name: string } | null> {
  if (!token.startsWith(TRIGGER_TOKEN_PREFIX)) return null;
  const row = await tokenByHash(deps.db, hashOf(token));
  if (!row) return null;
  await touchToken(deps.db, row.id, new Date(deps.clock.now()));
  return { jobId: String(row.cronJobId), name: row.name };
}

/** An event's payload: a JSON object within MAX_PAYLOAD_BYTES (null when the call sent none). */
export function eventPayload(body: unknown): Record<string, unknown> | null {
  if (body === undefined || body === null) return null;
  const payload = validate(payloadObject, body, "payload");
  const bytes = Buffer.byteLength(JSON.stringify(payload));
  if (bytes > MAX_PAYLOAD_BYTES)
    throw new MissiondError(
      "PAYLOAD_TOO_LARGE",
      `payload: ${bytes} bytes is larger than the limit of ${MAX_PAYLOAD_BYTES} bytes`,
    );
  return payload;
}
