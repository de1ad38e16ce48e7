/**
 * The daemon's RSS by kind of memory mapping, from /proc/PID/smaps: what the RSS verdict's growth is
 * made of when neither V8's heap nor an isolate's heap shows it. Read on Linux, x86-64, glibc.
 *
 * - `v8`: anonymous 256 KB pages at 256 KB boundaries (and runs of them), V8's heap pages, of the
 *   daemon's isolate and every plugin isolate;
 * - `code`: anonymous executable mappings, V8's generated code;
 * - `malloc`: glibc's heaps, the main one (`[heap]`) and each thread's arena (64 MB-aligned);
 * - `offHeap`: every other anonymous mapping, mostly blocks malloc took from the kernel on their
 *   own (above its mmap threshold): V8's string tables, large buffers, WebAssembly memory;
 * - `files`: file-backed mappings (the node binary, shared libraries, the compiled bundle).
 */
import { readFileSync } from "node:fs";

export type MappingKind = "v8" | "code" | "malloc" | "offHeap" | "files";
export const MAPPING_KINDS: readonly MappingKind[] = ["v8", "code", "malloc", "offHeap", "files"];

const PAGE = 256 * 1024;
const ARENA = 64 * 1024 * 1024;

function kindOf(start: number, end: number, perms: string, name: string): MappingKind | null {
  if (name.startsWith("/")) return "files";
  if (name === "[heap]") return "malloc";
  if (name !== "") return null; // [stack], [vdso] and the like: a few pages
  if (perms.includes("x")) return "code";
  const size = end - start;
  if (start % ARENA === 0 && size !== PAGE) return "malloc";
  if (start % PAGE === 0 && size % PAGE === 0) return "v8";
  return "offHeap";
}

/** MB resident per kind of mapping, of the process `pid`. */
export function rssByMapping(pid: number): Record<MappingKind, number> {
  const out: Record<MappingKind, number> = { v8: 0, code: 0, malloc: 0, offHeap: 0, files: 0 };
  let current: MappingKind | null = null;
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      const [, from, to, perms, name] = header;
      current = kindOf(parseInt(from!, 16), parseInt(to!, 16), perms!, name!.trim());
    } else if (current && line.startsWith("Rss:")) out[current] += Number(line.split(/\s+/)[1]) / 1024;
  }
  return out;
}
