import type { z } from "zod";
import type { CronJobRow } from "../db/schema/index.ts";
import type { NewCronJob } from "./queries.ts";

/**
 * The shape of one entry of the job table (`fields.ts`), and `field()`, which declares one: each
 * domain that adds fields to a job (approvals, concurrency, labels, events…) declares its entries
 * with it, and `fields.ts` spreads them into JOB_FIELDS.
 */

/** How a field is spelled on the command line. */
export interface FlagSpec {
  /** commander's flags: `--tz <zone>`; a boolean has no argument. The jobs-file key is the long flag in snake_case. */
  flags: string;
  help: string;
  /** `cron edit`'s help, when it says something else than `cron add`'s. */
  editHelp?: string;
  /** Only on one of the two commands. */
  only?: "add" | "edit";
  /** A boolean that `cron edit` can turn off: the help of `--no-<flag>`. */
  off?: string;
  /** A flag without an argument that sends this value (`--fresh-session` sends sessionMode "fresh"). */
  sends?: unknown;
  /** The jobs-file key when it is not the long flag in snake_case (`--label` → `labels`). */
  fileKey?: string;
  /** A repeatable flag: folds each given text into the value so far (`--label a=1 --label b=2`), throwing on bad text. */
  collect?: (text: string, previous: unknown) => unknown;
}

export interface FieldSpec<I extends z.ZodType = z.ZodType, V extends z.ZodType = z.ZodType> {
  /** The value a request gives (`cron add`, `cron edit`, a jobs file), without default or optionality. */
  input: I;
  /** The value an answer, a revision and a jobs-file comparison show: one spelling per value. */
  view: V;
  /** `cron add`'s value when it is left out; with neither this nor `required` the field is optional. */
  default?: z.output<I>;
  required?: true;
  /** `cron edit` takes null (the CLI's `none`) to clear it. */
  clearable?: true;
  /** Changing it moves the job's next slot (a jobs file's update recomputes it only then). */
  timing?: true;
  /** Not changed by `cron edit` (a pause has its own routes). */
  addOnly?: true;
  /** Left out of jobs files (the name is the table's key; derived or state fields). */
  noFile?: true;
  cli?: FlagSpec;
  /** Validates a given value beyond its schema (the time zone exists), throwing a MissiondError. */
  check?: (value: z.output<I>) => void;
  /** The stored row's value, as `view`. */
  read: (row: CronJobRow) => z.output<V>;
  /** The columns a given value (null when cleared) sets. */
  columns: (value: z.output<I> | null) => Partial<NewCronJob>;
  /** A given value in the view's spelling ("90m" → "1h30m"); the identity when absent. */
  normalize?: (value: z.output<I>) => z.output<V>;
  /** The API fields a value (null when cleared) given on the command line or in a file also sets. */
  implies?: (value: z.output<I> | null) => Record<string, unknown>;
}

/** What the request schemas need to know of an entry's type: kept literal by `field()`. */
export interface Marks {
  default?: unknown;
  required?: true;
  clearable?: true;
  addOnly?: true;
}

export const field = <I extends z.ZodType, V extends z.ZodType, const M extends Marks>(
  spec: FieldSpec<I, V> & M,
): FieldSpec<I, V> & M => spec;
