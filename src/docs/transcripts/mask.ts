/**
 * What of a transcript's output changes from one run to the next: times, instance names, process
 * ids, durations. Two outputs that differ only there are the same output; the page keeps the one
 * it has. The masked form is only compared, never written.
 */

const RULES: readonly [RegExp, string][] = [
  // ISO timestamps (2026-12-05T21:19:58.657Z, with an offset, or with a space), and bare times of day.
  [/\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?/g, "<time>"],
  [/\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b/g, "<time>"],
  // Relative times: "in 599s", "in 3h 2m", "5m ago", "(3h)".
  [/\bin \d+(?:\.\d+)?(?:ms|s|m|h|d|w)(?: \d+(?:\.\d+)?(?:ms|s|m|h|d))*\b/g, "in <dur>"],
  [/\b\d+(?:\.\d+)?(?:ms|s|m|h|d|w)(?: \d+(?:\.\d+)?(?:ms|s|m|h|d))* ago\b/g, "<dur> ago"],
  // Durations in milliseconds and seconds with a fraction: "12 ms", "12ms", "1.25s".
  [/\b\d+(?:\.\d+)? ?ms\b/g, "<ms>"],
  [/\b\d+\.\d+ ?s\b/g, "<dur>"],
  // JSON durations and counters that depend on timing ("latenessMs": 3, "durationMs": 12).
  [/("\w*Ms"\s*:\s*)-?\d+(?:\.\d+)?/g, "$1<ms>"],
  // Who: a uid actor, an instance named host:pid, a pid.
  [/\b(uid|gid):\d+\b/g, "$1:<n>"],
  [/\b[a-z][\w.-]*:\d{2,7}\b/gi, "<instance>"],
  [/\bpid \d+\b/g, "pid <n>"],
  // Trigger tokens (`cron token create`): random each run.
  [/\bmdt_[A-Za-z0-9_-]+/g, "mdt_<token>"],
  // UUIDs and long hex digests.
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "<uuid>"],
  [/\b[0-9a-f]{16,}\b/gi, "<hex>"],
];

/** Table columns whose values are timings (`LATE MS`, `MS`, `DURATION`): masked cell by cell. */
const TIMING_COLUMN = /(?:^|\s)(?:[A-Z]+ )?(?:MS|DURATION|TOOK|AGE)$/;

/**
 * A table's header: two or more upper-case column names separated by runs of spaces. The CLI pads
 * every row to the header's column starts, so a cell is the text from its column's start.
 */
function headerColumns(line: string): { start: number; name: string }[] | undefined {
  if (!/^[A-Z][A-Z0-9 /._-]*[A-Z0-9]$/.test(line) || !/ {2}/.test(line)) return undefined;
  const columns: { start: number; name: string }[] = [];
  for (const m of line.matchAll(/\S+(?: \S+)*/g)) columns.push({ start: m.index, name: m[0] });
  return columns.length >= 2 ? columns : undefined;
}

function maskTimingColumns(lines: readonly string[]): string[] {
  let columns: { start: number; name: string }[] | undefined;
  return lines.map((line) => {
    const header = headerColumns(line);
    if (header) {
      columns = header;
      return line;
    }
    if (!columns || !line.trim()) {
      columns = undefined;
      return line;
    }
    let out = line;
    // From the right, so earlier offsets stay valid.
    for (let c = columns.length - 1; c >= 0; c--) {
      const { start, name } = columns[c]!;
      if (!TIMING_COLUMN.test(name)) continue;
      const end = columns[c + 1]?.start ?? out.length;
      const value = out.slice(start, end);
      // Always a space after the placeholder: a short value ("37  ") is narrower than "<ms>", and
      // the next cell must not run into it ("<ms>cancelled" against a longer run's "<ms> cancelled").
      if (/^-?\d+(?:\.\d+)?\s*$/.test(value)) out = `${out.slice(0, start)}<ms> ${out.slice(end)}`;
    }
    return out;
  });
}

/** The output with its volatile parts replaced by placeholders and runs of spaces (column padding) collapsed. */
export function mask(lines: readonly string[]): string {
  let text = maskTimingColumns(lines).join("\n");
  for (const [pattern, replacement] of RULES) text = text.replace(pattern, replacement);
  return text
    .split("\n")
    .map((line) => line.replace(/[ \t]+/g, " ").trimEnd())
    .join("\n")
    .trim();
}

/** Whether two outputs are the same but for their volatile parts. */
export const sameOutput = (a: readonly string[], b: readonly string[]) => mask(a) === mask(b);
