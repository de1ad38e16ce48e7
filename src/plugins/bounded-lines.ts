import type { Readable } from "node:stream";

/** The first `maxChars` of a text that arrives in pieces, and how many characters past them were dropped. */
export class BoundedText {
  private text = "";
  private readonly maxChars: number;
  dropped = 0;

  constructor(maxChars: number) {
    this.maxChars = maxChars;
  }

  add(chunk: string): void {
    const room = Math.max(0, this.maxChars - this.text.length);
    this.text += chunk.length <= room ? chunk : chunk.slice(0, room);
    this.dropped += Math.max(0, chunk.length - room);
  }

  toString(): string {
    return this.text;
  }
}

/**
 * Splits a child's output into lines, keeping at most `maxChars` of each: the rest of a longer
 * line is counted and dropped as it arrives, so a child that prints an endless line costs the
 * daemon a bounded buffer, never a string past V8's limit. `onLine` gets the kept head and how
 * many characters were dropped; a last line without a newline comes at the end of the stream.
 */
export function boundedLines(
  stream: Readable,
  maxChars: number,
  onLine: (line: string, dropped: number) => void,
): void {
  let line = new BoundedText(maxChars);
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    let from = 0;
    for (let at = chunk.indexOf("\n"); at !== -1; at = chunk.indexOf("\n", from)) {
      line.add(chunk.slice(from, at));
      const text = line.toString();
      onLine(text.endsWith("\r") ? text.slice(0, -1) : text, line.dropped);
      line = new BoundedText(maxChars);
      from = at + 1;
    }
    line.add(chunk.slice(from));
  });
  stream.on("end", () => {
    if (line.toString() !== "" || line.dropped > 0) onLine(line.toString(), line.dropped);
  });
}
