import { z } from "zod";

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * Parses "500ms", "30s", "10m", "1h30m", "2d" into milliseconds. Returns null for anything else,
 * including a bare number (ambiguous units are how a "30" meant as minutes fires every 30 ms).
 */
export function parseDuration(text: string): number | null {
  const trimmed = text.trim().toLowerCase();
  if (!/^(\d+(?:\.\d+)?(ms|s|m|h|d|w))+$/.test(trimmed)) return null;
  let total = 0;
  for (const [, amount, unit] of trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)) {
    total += Number(amount) * UNIT_MS[unit!]!;
  }
  return Number.isFinite(total) ? Math.round(total) : null;
}

/** The inverse, for display: 5400000 → "1h30m". */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  const parts: string[] = [];
  let rest = ms;
  for (const unit of ["d", "h", "m", "s"] as const) {
    const size = UNIT_MS[unit]!;
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  if (rest > 0) parts.push(`${rest}ms`);
  return parts.join("");
}

/**
 * A duration text from `minMs` up to `maxMs`, refused with the bounds and an example: the schema of
 * a job's bounded waits and windows (an approval window, a concurrency wait, an alert window).
 */
export function boundedDuration(minMs: number, maxMs: number, example: string) {
  return z.string().refine(
    (v) => {
      const ms = parseDuration(v);
      return ms !== null && ms >= minMs && ms <= maxMs;
    },
    `a duration from ${formatDuration(minMs)} up to ${formatDuration(maxMs)}, e.g. ${example}`,
  );
}
