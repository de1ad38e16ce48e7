/**
 * The daemon's RSS by kind of memory mapping, from /proc/PID/smaps: what the RSS verdict's growth is
 * made of when neither V8's heap nor an isolate's heap shows it. Read on Linux, x86-64, glibc.
 *
 * - `v8`: anonymous 256 KB pages at 256 KB boundaries (and runs of them), V8's heap pages, of the
 *   daemon's isolate and every plugin isolate;
 * - `code`: anonymous executable mappings, V8's generated code;
 * - `wasm`: WebAssembly memory (the embedded database's), the mapping right before its reservation
 *   of gigabytes;
 * - `malloc`: glibc's heaps, the main one (`[heap]`) and each thread's arena (64 MB-aligned);
 * - `offHeap`: every other anonymous mapping, mostly blocks malloc took from the kernel on their
 *   own (above its mmap threshold): V8's string tables, large buffers;
 * - `files`: file-backed mappings (the node binary, shared libraries, the compiled bundle).
 */
import { readFileSync } from "node:fs";

export type MappingKind = "v8" | "code" | "wasm" | "malloc" | "offHeap" | "files";
export const MAPPING_KINDS: readonly MappingKind[] = ["v8", "code", "wasm", "malloc", "offHeap", "files"];

const PAGE = 256 * 1024;
const ARENA = 64 * 1024 * 1024;
const RESERVATION = 1024 * 1024 * 1024;

interface Mapping {
  start: number;
  end: number;
  perms: string;
  name: string;
  rssKb: number;
}

function kindOf(m: Mapping, next: Mapping | undefined): MappingKind | null {
  if (m.name.startsWith("/")) return "files";
  if (m.name === "[heap]") return "malloc";
  if (m.name !== "") return null; // [stack], [vdso] and the like: a few pages
  if (m.perms.includes("x")) return "code";
  if (next && next.start === m.end && next.perms === "---p" && next.end - next.start >= RESERVATION) return "wasm";
  const size = m.end - m.start;
  if (m.start % ARENA === 0 && size !== PAGE) return "malloc";
  if (m.start % PAGE === 0 && size % PAGE === 0) return "v8";
  return "offHeap";
}

function mappings(pid: number): Mapping[] {
  const out: Mapping[] = [];
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      const [, from, to, perms, name] = header;
      out.push({ start: parseInt(from!, 16), end: parseInt(to!, 16), perms: perms!, name: name!.trim(), rssKb: 0 });
    } else if (line.startsWith("Rss:") && out.length > 0) out.at(-1)!.rssKb = Number(line.split(/\s+/)[1]);
  }
  return out;
}

/** MB resident per kind of mapping, of the process `pid`. */
export function rssByMapping(pid: number): Record<MappingKind, number> {
  const out: Record<MappingKind, number> = { v8: 0, code: 0, wasm: 0, malloc: 0, offHeap: 0, files: 0 };
  const all = mappings(pid);
  all.forEach((m, i) => {
    const kind = kindOf(m, all[i + 1]);
    if (kind) out[kind] += m.rssKb / 1024;
  });
  return out;
}
