import { fencesOf } from "../markdown.ts";

/**
 * The runnable parts of a docs page, in page order.
 *
 * A transcript is a fenced block with the info string `console`, directly preceded by the line
 * `<!-- transcript -->` (blank lines between them allowed). Lines starting `$ ` are commands; the
 * lines after each, up to the next `$ ` line, are its output. A command continues on the next line
 * after a trailing `\`, and through the body of a here-document (`cat > jobs.toml <<'EOF'` … `EOF`).
 * A command expected to fail ends with a comment naming its exit code: `$ missiond cron show 99  # exits 4`.
 *
 * A fenced block directly preceded by `<!-- file: NAME -->` is written to the page's working
 * directory as NAME before the transcripts after it run (a jobs file the page shows, then applies).
 */

export const TRANSCRIPT_MARKER = "<!-- transcript -->";
const FILE_MARKER = /^<!--\s*file:\s*(\S+)\s*-->$/;
const EXPECTED_EXIT = /\s#\s*exits\s+(\d+)\s*$/;

export interface Command {
  /** The command's lines as the page shows them, the first with its `$ `. */
  shown: string[];
  /** What the shell runs: the lines joined, without the `$ `. */
  script: string;
  /** The exit code the page expects: 0 unless a `# exits N` comment says otherwise. */
  expectedExit: number;
  /** The output lines the page shows. */
  output: string[];
}

export interface Transcript {
  kind: "transcript";
  /** Index of the line after the opening fence (the first command). */
  bodyStart: number;
  /** Index of the closing fence. */
  bodyEnd: number;
  /** 1-based line of the opening fence, for messages. */
  line: number;
  commands: Command[];
}

export interface FileBlock {
  kind: "file";
  name: string;
  content: string;
}

export type Step = Transcript | FileBlock;

/** The marker line above a fence, skipping blank lines; undefined when there is none. */
function markerAbove(lines: readonly string[], fenceStart: number): string | undefined {
  let i = fenceStart - 1;
  while (i >= 0 && !lines[i]!.trim()) i--;
  return i >= 0 ? lines[i]!.trim() : undefined;
}

/** The here-document terminator a command line opens, if any. */
const heredocEnd = (line: string) => /<<-?\s*(['"]?)(\w+)\1/.exec(line)?.[2];

/** Splits a transcript's body into its commands and their outputs. */
export function commandsOf(body: readonly string[], where = "transcript"): Command[] {
  const commands: Command[] = [];
  let i = 0;
  while (i < body.length && !body[i]!.startsWith("$ ")) {
    if (body[i]!.trim()) throw new Error(`${where}: output before the first command: ${body[i]}`);
    i++;
  }
  while (i < body.length) {
    const shown = [body[i]!];
    let terminator = heredocEnd(body[i]!);
    while (i + 1 < body.length && (terminator || shown.at(-1)!.endsWith("\\"))) {
      i++;
      shown.push(body[i]!);
      if (terminator && body[i]!.trim() === terminator) terminator = undefined;
      else if (!terminator) terminator = heredocEnd(body[i]!);
    }
    i++;
    const output: string[] = [];
    while (i < body.length && !body[i]!.startsWith("$ ")) output.push(body[i++]!);
    while (output.length && !output.at(-1)!.trim()) output.pop();
    const exit = EXPECTED_EXIT.exec(shown.at(-1)!);
    commands.push({
      shown,
      script: [shown[0]!.slice(2), ...shown.slice(1)].join("\n"),
      expectedExit: exit ? Number(exit[1]) : 0,
      output,
    });
  }
  return commands;
}

/** The transcripts and file blocks of a page, in order. */
export function stepsOf(markdown: string, where = "page"): Step[] {
  const lines = markdown.split("\n");
  const steps: Step[] = [];
  for (const fence of fencesOf(lines)) {
    const marker = markerAbove(lines, fence.start);
    if (marker === TRANSCRIPT_MARKER) {
      if (fence.info !== "console")
        throw new Error(`${where}:${fence.start + 1}: a transcript must be a \`console\` block, not \`${fence.info}\``);
      const body = lines.slice(fence.start + 1, fence.end);
      steps.push({
        kind: "transcript",
        bodyStart: fence.start + 1,
        bodyEnd: fence.end,
        line: fence.start + 1,
        commands: commandsOf(body, `${where}:${fence.start + 1}`),
      });
    }
    const file = marker ? FILE_MARKER.exec(marker) : null;
    if (file)
      steps.push({ kind: "file", name: file[1]!, content: lines.slice(fence.start + 1, fence.end).join("\n") + "\n" });
  }
  return steps;
}

/** A transcript's body as the page shows it: each command's lines, then its output. */
export function renderTranscript(commands: readonly Pick<Command, "shown" | "output">[]): string[] {
  return commands.flatMap((c) => [...c.shown, ...c.output]);
}
