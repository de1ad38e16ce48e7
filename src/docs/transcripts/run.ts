import { readFileSync } from "node:fs";
import { basename, relative } from "node:path";
import { pageConfig, REPO_ROOT, startPageDaemon, type PageDaemon, type PageDaemonOptions } from "./daemon.ts";
import { sameOutput } from "./mask.ts";
import { renderTranscript, stepsOf, type Command, type Transcript } from "./page.ts";

/**
 * Runs a page's transcripts in order against one fresh daemon and rewrites their outputs. An
 * output that differs from the page's only in its volatile parts (mask.ts) is kept as the page has
 * it, so a page that is current regenerates to itself.
 */

export interface CommandResult {
  /** 1-based line of the command in the page. */
  line: number;
  shown: string[];
  expectedExit: number;
  code: number;
  /** What the daemon printed (paths shown as the pages show them). */
  output: string[];
  /** What the page shows. */
  committed: string[];
  /** The output matches the page's, volatile parts aside. */
  same: boolean;
}

export interface PageResult {
  /** The page's path, relative to the repository. */
  page: string;
  transcripts: number;
  commands: CommandResult[];
  /** The page as it was read. */
  source: string;
  /** The page with every transcript's output regenerated. */
  text: string;
  /** A command exited otherwise than the page says. */
  failed: CommandResult[];
  /** A command's output differs from the page's. */
  stale: CommandResult[];
}

/** `docs/jobs.md` → `jobs`, the repository's `README.md` → `README`, `docs/README.md` → `index`: the name of its .toml. */
export function pageName(path: string): string {
  const rel = relative(REPO_ROOT, path);
  if (rel === "docs/README.md") return "index";
  return rel.replace(/^docs\//, "").replace(/\.md$/, "") || basename(path, ".md");
}

/** Verbs that only read: such a command is run again for a moment while its output differs (work still settling). */
const READ_ONLY = new Set(["ls", "show", "history", "decisions", "preview", "messages", "events", "export", "check"]);
const SETTLE_MS = 5_000;

function readOnly(script: string): boolean {
  if (/(^|[^2&])>/.test(script)) return false;
  const invocations = script.split(/\|\||&&|[|;]/).filter((part) => /^\s*missiond\b/.test(part));
  if (!invocations.length) return /^\s*(cat|echo)\b/.test(script);
  return invocations.every((part) => {
    const words = part
      .trim()
      .split(/\s+/)
      .slice(1)
      .filter((w) => !w.startsWith("-"));
    return words[0] === "doctor" || READ_ONLY.has(words[1] ?? "");
  });
}

const outputLines = (text: string) => {
  const lines = text.split("\n").map((l) => l.trimEnd());
  while (lines.length && !lines.at(-1)) lines.pop();
  return lines;
};

async function runCommand(daemon: PageDaemon, command: Command, line: number): Promise<CommandResult> {
  const settleBy = Date.now() + SETTLE_MS;
  for (;;) {
    const finished = await daemon.run(command.script);
    const output = outputLines(daemon.display(finished.output));
    const same = sameOutput(output, command.output);
    const result = {
      line,
      shown: command.shown,
      expectedExit: command.expectedExit,
      code: finished.code,
      output,
      committed: command.output,
      same,
    };
    if (same || !readOnly(command.script) || Date.now() > settleBy) return result;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function runTranscript(daemon: PageDaemon, transcript: Transcript): Promise<CommandResult[]> {
  const results: CommandResult[] = [];
  let line = transcript.bodyStart + 1;
  for (const command of transcript.commands) {
    results.push(await runCommand(daemon, command, line));
    line += command.shown.length + command.output.length;
  }
  return results;
}

/** Runs the page at `path` (absolute), its daemon started with `options`; writes nothing. */
export async function runPage(path: string, options: PageDaemonOptions = {}): Promise<PageResult> {
  const page = relative(REPO_ROOT, path);
  const markdown = readFileSync(path, "utf8");
  const steps = stepsOf(markdown, page);
  const transcripts = steps.filter((s): s is Transcript => s.kind === "transcript");
  const result: PageResult = {
    page,
    transcripts: transcripts.length,
    commands: [],
    source: markdown,
    text: markdown,
    failed: [],
    stale: [],
  };
  if (!transcripts.length) return result;

  const daemon = await startPageDaemon(pageConfig(pageName(path)), options);
  const bodies = new Map<Transcript, string[]>();
  try {
    for (const step of steps) {
      if (step.kind === "file") {
        daemon.writeFile(step.name, step.content);
        continue;
      }
      const commands = await runTranscript(daemon, step);
      result.commands.push(...commands);
      bodies.set(
        step,
        renderTranscript(commands.map((c) => ({ shown: c.shown, output: c.same ? c.committed : c.output }))),
      );
    }
  } finally {
    await daemon.stop();
  }
  const lines = markdown.split("\n");
  // From the last transcript up, so the earlier ones' line numbers stay valid.
  for (const transcript of [...transcripts].reverse())
    lines.splice(transcript.bodyStart, transcript.bodyEnd - transcript.bodyStart, ...bodies.get(transcript)!);
  result.text = lines.join("\n");
  result.failed = result.commands.filter((c) => c.code !== c.expectedExit);
  result.stale = result.commands.filter((c) => !c.same);
  return result;
}

/** A failed or stale command, for a person: where, what ran, how it exited, and the two outputs. */
export function explain(page: string, c: CommandResult): string {
  const exit = c.code === c.expectedExit ? "" : ` exited ${c.code}, the page expects ${c.expectedExit}`;
  const head = `${page}:${c.line}: ${c.shown.join("\n")}${exit}`;
  if (c.same) return `${head}\n${c.output.map((l) => `  | ${l}`).join("\n")}`;
  return [head, ...c.committed.map((l) => `  - ${l}`), ...c.output.map((l) => `  + ${l}`)].join("\n");
}
