import { z } from "zod";

/**
 * What a run consumed, as an agent reports it: tokens in and out, what it cost in US dollars and
 * the model that answered. Every part is optional; a run without a report records none.
 */
export interface Usage {
  readonly inputTokens: number | null;
  readonly outputTokens: number | null;
  readonly costUsd: number | null;
  readonly model: string | null;
}

/** A run's usage as answers show it (null when the run reported none). */
export const usageView = z
  .object({
    inputTokens: z.int().nullable(),
    outputTokens: z.int().nullable(),
    costUsd: z.number().nullable().describe("What the run cost in US dollars, as its agent reported it."),
    model: z.string().nullable(),
  })
  .strict();

/** The usage columns of a run, as its answer shows them. */
export function usageOfRow(run: {
  inputTokens: number | null;
  outputTokens: number | null;
  costUsd: number | null;
  model: string | null;
}): Usage | null {
  const { inputTokens, outputTokens, costUsd, model } = run;
  if (inputTokens === null && outputTokens === null && costUsd === null && model === null) return null;
  return { inputTokens, outputTokens, costUsd, model };
}

/** The largest token count and cost one run may report: beyond them a report is a mistake, not a run. */
export const MAX_RUN_TOKENS = 1_000_000_000;
export const MAX_RUN_COST_USD = 100_000;
const MAX_MODEL_CHARS = 200;

/** The `usage` object of an agent's answer, in the agent's own snake_case spelling. */
export const usageReport = z
  .object({
    input_tokens: z.number().int().min(0).max(MAX_RUN_TOKENS).optional(),
    output_tokens: z.number().int().min(0).max(MAX_RUN_TOKENS).optional(),
    cost_usd: z.number().min(0).max(MAX_RUN_COST_USD).optional(),
    model: z.string().trim().min(1).max(MAX_MODEL_CHARS).optional(),
  })
  .passthrough();

/** A usage report read from an answer: the usage, or why a report that was there is ignored. */
export type UsageRead = { usage: Usage | null; warning?: string };

const NONE: UsageRead = { usage: null };

/**
 * Reads the `usage` member of a parsed answer. A missing member is no report; a malformed one is
 * ignored with a warning that names what is wrong, never failing the run it came with.
 */
export function usageOf(answer: unknown): UsageRead {
  if (answer === null || typeof answer !== "object" || !("usage" in answer)) return NONE;
  const raw = (answer as { usage: unknown }).usage;
  if (raw === null || raw === undefined) return NONE;
  const parsed = usageReport.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length ? `usage.${issue.path.join(".")}` : "usage";
    return { usage: null, warning: `${where}: ${issueWords(issue)}` };
  }
  const u = parsed.data;
  const usage: Usage = {
    inputTokens: u.input_tokens ?? null,
    outputTokens: u.output_tokens ?? null,
    costUsd: u.cost_usd ?? null,
    model: u.model ?? null,
  };
  return Object.values(usage).every((v) => v === null) ? NONE : { usage };
}

function issueWords(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      if (issue.expected === "int") return "not a whole number";
      return `not ${/^[aeiou]/.test(issue.expected) ? "an" : "a"} ${issue.expected}`;
    case "too_small":
      return issue.origin === "string" ? "empty" : `below ${String(issue.minimum)}`;
    case "too_big":
      return issue.origin === "string" ? `longer than ${String(issue.maximum)}` : `above ${String(issue.maximum)}`;
    default:
      return issue.message;
  }
}

/** The usage in a JSON body (a webhook agent's answer); none when the body is not a JSON object. */
export function usageInBody(text: string): UsageRead {
  const start = text.trimStart();
  if (!start.startsWith("{")) return NONE;
  try {
    return usageOf(JSON.parse(start));
  } catch {
    return NONE;
  }
}

/** The usage in a command's last non-empty line of output, when that line is a JSON object. */
export function usageInLastLine(output: string | null | undefined): UsageRead {
  if (!output) return NONE;
  const trimmed = output.trimEnd();
  const last = trimmed.slice(trimmed.lastIndexOf("\n") + 1).trim();
  return last.startsWith("{") ? usageInBody(last) : NONE;
}
