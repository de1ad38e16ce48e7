import { z } from "zod";

/**
 * A job's labels: `key=value` strings an operator attaches (team, env …) to find jobs by
 * (`cron ls --label team=ops`) and to route their alerts (`labels` of `[[alerts.routes]]`).
 */

export type Labels = Readonly<Record<string, string>>;

export const LABEL_KEY = /^[a-z0-9][a-z0-9_.-]{0,62}$/;
export const MAX_LABELS = 32;
export const MAX_LABEL_VALUE = 200;

const keyRule = "1-63 lowercase letters, digits, '_', '.' or '-', starting with a letter or digit";

/** Labels as a request gives them; each problem names the label it is about. */
export const labelsInput = z.record(z.string(), z.string()).superRefine((labels, ctx) => {
  const keys = Object.keys(labels);
  if (keys.length > MAX_LABELS)
    ctx.addIssue({ code: "custom", message: `at most ${MAX_LABELS} labels (${keys.length} given)` });
  for (const key of keys) {
    if (!LABEL_KEY.test(key)) ctx.addIssue({ code: "custom", message: `label "${key}": the key must be ${keyRule}` });
    else if (labels[key]!.length > MAX_LABEL_VALUE)
      ctx.addIssue({
        code: "custom",
        message: `label "${key}": the value is longer than ${MAX_LABEL_VALUE} characters`,
      });
  }
});

/** One spelling per set of labels: keys sorted; none at all is null. */
export function normalizeLabels(labels: Labels | null | undefined): Labels | null {
  if (!labels) return null;
  const keys = Object.keys(labels).sort();
  return keys.length === 0 ? null : Object.fromEntries(keys.map((k) => [k, labels[k]!]));
}

/** `team=ops` → ["team", "ops"]; the error says what is wrong with the text. */
export function parseLabel(text: string): [string, string] {
  const at = text.indexOf("=");
  if (at <= 0) throw new Error(`label "${text}": write it as key=value, e.g. team=ops`);
  const key = text.slice(0, at).trim();
  const value = text.slice(at + 1);
  if (!LABEL_KEY.test(key)) throw new Error(`label "${key}": the key must be ${keyRule}`);
  if (value.length > MAX_LABEL_VALUE)
    throw new Error(`label "${key}": the value is longer than ${MAX_LABEL_VALUE} characters`);
  return [key, value];
}

/** Whether `labels` carries every one of `wanted` (none wanted: all do). */
export function hasLabels(labels: Labels | null | undefined, wanted: Labels | null | undefined): boolean {
  if (!wanted) return true;
  return Object.entries(wanted).every(([key, value]) => labels?.[key] === value);
}

/** `team=ops,env=prod` (a list query's `label`) → { team: "ops", env: "prod" }. */
export function parseLabelList(text: string): Labels {
  return Object.fromEntries(text.split(",").map((part) => parseLabel(part)));
}

/** A list query's `label`: the labels every job listed carries, `key=value` joined by commas. */
export const labelQuery = z
  .string()
  .min(1)
  .max(2000)
  .superRefine((text, ctx) => {
    try {
      parseLabelList(text);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: (err as Error).message });
    }
  })
  .describe("Only jobs carrying all these labels: `key=value`, several joined by commas (`team=ops,env=prod`).");
