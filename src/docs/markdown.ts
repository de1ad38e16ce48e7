/**
 * The little of markdown the docs tools need: which lines are inside fenced code, the headings
 * and their anchors as GitHub renders them, and the links a page makes.
 */

/** A fence opener or closer: three or more backticks or tildes, then an optional info string. */
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

export interface Fence {
  /** Index of the opening line. */
  start: number;
  /** Index of the closing line (the last line when the fence is never closed). */
  end: number;
  /** The info string, trimmed (`console`, `toml`, ``). */
  info: string;
}

/** Every fenced code block of `lines`, in order. */
export function fencesOf(lines: readonly string[]): Fence[] {
  const fences: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const marker = open[1]!;
    let end = lines.length - 1;
    for (let j = i + 1; j < lines.length; j++) {
      const close = FENCE.exec(lines[j]!);
      // A closer uses the opener's character, at least as many, and has no info string.
      if (close && close[1]![0] === marker[0] && close[1]!.length >= marker.length && !close[2]!.trim()) {
        end = j;
        break;
      }
    }
    fences.push({ start: i, end, info: open[2]!.trim() });
    i = end;
  }
  return fences;
}

/** Which lines are inside a fenced block (fence lines included). */
export function codeLines(lines: readonly string[]): boolean[] {
  const inCode = lines.map(() => false);
  for (const fence of fencesOf(lines)) for (let i = fence.start; i <= fence.end; i++) inCode[i] = true;
  return inCode;
}

/**
 * GitHub's heading anchor: lower case, markup and punctuation dropped (letters, digits, `-`, `_`
 * and spaces stay), each space a hyphen. Repeats are numbered by headingAnchors.
 */
export function slug(heading: string): string {
  const text = heading
    // Inline markup renders as its text: links, code spans, emphasis, html tags.
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/[`*]/g, "");
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a page's headings (ATX `#` and setext), repeats suffixed `-1`, `-2` as GitHub does. */
export function headingAnchors(markdown: string): Set<string> {
  const lines = markdown.split("\n");
  const inCode = codeLines(lines);
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const add = (heading: string) => {
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  };
  for (let i = 0; i < lines.length; i++) {
    if (inCode[i]) continue;
    const line = lines[i]!;
    const atx = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (atx) add(atx[1]!);
    else if (
      i > 0 &&
      !inCode[i - 1] &&
      lines[i - 1]!.trim() &&
      /^ {0,3}(=+|-+)\s*$/.test(line) &&
      !/^\s*[-*+] /.test(lines[i - 1]!)
    )
      add(lines[i - 1]!);
  }
  // Explicit anchors: <a id="x"></a> or <a name="x">.
  for (const match of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  return anchors;
}

export interface Link {
  /** 1-based line number. */
  line: number;
  target: string;
}

/** The links of a page outside code: inline `[text](target)`, images, reference definitions and html href/src. */
export function linksOf(markdown: string): Link[] {
  const lines = markdown.split("\n");
  const inCode = codeLines(lines);
  const links: Link[] = [];
  lines.forEach((raw, i) => {
    if (inCode[i]) return;
    const line = raw.replace(/`[^`]*`/g, "");
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      links.push({ line: i + 1, target: m[1]! });
    const definition = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/.exec(line);
    if (definition) links.push({ line: i + 1, target: definition[1]! });
    for (const m of line.matchAll(/\b(?:href|src)="([^"]+)"/g)) links.push({ line: i + 1, target: m[1]! });
  });
  return links;
}

/** Whether a link leaves the repository (a scheme such as https:, mailto:) rather than naming a file in it. */
export function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//");
}

/** A table cell: one line, pipes escaped. */
export const cell = (text: string) => text.replace(/\s*\n\s*/g, " ").replace(/\|/g, "\\|");
