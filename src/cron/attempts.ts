import type { z } from "zod";
import type { CronJobRunRow } from "../db/schema/index.ts";
import { ATTEMPT_EXCERPT_CHARS } from "../delivery/kind.ts";
import type { runAttempt } from "./answers.ts";

/**
 * A run's attempts, as `runs show` and the run page list them.
 *
 * Where they are kept, and why there: a run delivered at its first try (nearly every run) needs no
 * record beyond its own columns, so its close, a statement that runs anyway, writes only the last
 * attempt's HTTP status and duration beside its status, exit code and output. The attempts before
 * the last failed and were retried: each is appended to the run's `attempt_log` (jsonb) by the
 * update that already counts it as failed before pg-boss retries it. No run costs a statement more,
 * a run that never retried carries no JSON, and the records live and go with their run (its day
 * partition, retention's deletes and archive). A table of attempts would have cost an insert per
 * run, or a read beside every close.
 */

/** Earlier attempts kept on a run: the latest ones, the last attempt being the run's own columns. */
export const LOGGED_ATTEMPTS = 19;

/** A failed attempt as `attempt_log` keeps it (short keys: every retried run carries them). */
export interface LoggedAttempt {
  /** Its number: the run's count of started attempts when it failed. */
  n: number;
  /** When it started (ISO), and how long it took. */
  at: string;
  ms: number;
  status: "Failed" | "TimedOut";
  /** The HTTP status that failed it (webhook, llm), if any. */
  http: number | null;
  excerpt: string;
}

/** One attempt as the API answers it. */
export type RunAttempt = z.infer<typeof runAttempt>;

/** The end of a text, bounded as an attempt's excerpt: a failure's last lines say why. */
const tail = (text: string | null): string | null =>
  text === null || text.length <= ATTEMPT_EXCERPT_CHARS ? text : `…${text.slice(-(ATTEMPT_EXCERPT_CHARS - 1))}`;

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The run's attempts, oldest first: the logged ones, then the last, read from the run itself (its
 * status: Running while it executes, Unknown when it vanished with the instance that ran it).
 */
export function attemptsOf(run: CronJobRunRow): RunAttempt[] {
  const logged = (run.attemptLog ?? []).map((a): RunAttempt => ({
    number: a.n,
    status: a.status,
    startedAt: a.at,
    finishedAt: iso(Date.parse(a.at) + a.ms),
    durationMs: a.ms,
    httpStatus: a.http,
    exitCode: null,
    excerpt: a.excerpt,
  }));
  const lastLogged = logged.at(-1)?.number ?? 0;
  if (run.attempts <= lastLogged) return logged;
  const finishedAt = run.finishedAt?.getTime() ?? null;
  const ms = run.attemptMs;
  return [
    ...logged,
    {
      number: run.attempts,
      status: run.status,
      startedAt: finishedAt !== null && ms !== null ? iso(finishedAt - ms) : null,
      finishedAt: finishedAt !== null ? iso(finishedAt) : null,
      durationMs: ms,
      httpStatus: run.httpStatus,
      exitCode: run.exitCode,
      excerpt: tail(run.output ?? (run.finishedAt ? run.reason : null)),
    },
  ];
}
