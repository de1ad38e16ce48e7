import { mkdir, open, rename } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzip } from "node:zlib";

const gzipAsync = promisify(gzip);

/**
 * Writes pruned runs to `dir` as one gzip-compressed JSON-lines file per batch, before the batch
 * is deleted. Written to a temporary name, flushed, then renamed: a crash leaves either the whole
 * file or none, never a truncated one. Compressed off the event loop (zlib's thread pool), so
 * claims are not held up. Resolves to the file's path.
 */
export async function archiveRuns(dir: string, rows: readonly { id: string }[], now: Date): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  const ids = rows.map((r) => BigInt(r.id));
  const low = ids.reduce((a, b) => (b < a ? b : a));
  const high = ids.reduce((a, b) => (b > a ? b : a));
  const path = join(dir, `runs-${stamp}-${low}-${high}.jsonl.gz`);
  const body = await gzipAsync(rows.map((row) => `${JSON.stringify(row)}\n`).join(""));
  const temporary = `${path}.tmp`;
  const file = await open(temporary, "w", 0o600);
  try {
    await file.writeFile(body);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temporary, path);
  return path;
}
