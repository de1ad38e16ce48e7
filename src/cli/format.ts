/** A plain text table: a header row, then one row per item, columns padded to fit. */
export function table(headers: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = rows.map((row) =>
    row.map((cell) => (cell === null || cell === undefined ? "-" : String(cell).replace(/\s+/g, " "))),
  );
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...cells.map(line)].join("\n");
}

export const shorten = (text: string | null, max: number): string | null =>
  text === null ? null : text.length <= max ? text : `${text.slice(0, max - 1)}…`;

/** One record as "key value" lines, the keys padded to `width`. */
export const fields = (record: object, width: number): string =>
  Object.entries(record)
    .map(([k, v]) => `${k.padEnd(width)} ${v ?? "-"}`)
    .join("\n");
