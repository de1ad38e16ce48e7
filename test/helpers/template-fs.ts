/**
 * Each test's embedded database starts from the run's migrated template (test/helpers/template.ts),
 * a tar of a PGlite data directory. Given as `loadDataDir`, PGlite copies the tar out of its Blob,
 * untars it (a checksum per entry, a copy of each file's bytes) and writes each file into its
 * in-memory filesystem (a third copy), about 86 ms of a new instance's 260 ms of CPU, plus the
 * collection of those copies. Here the tar is read once per test worker, and each new instance's
 * filesystem is filled from it before Postgres starts, one copy per file; PGlite then finds a
 * data directory and resumes it, as it does a data directory on disk.
 */
import { readFileSync } from "node:fs";
import { MemoryFS, type PGlite } from "@electric-sql/pglite";

/** Where PGlite keeps its data directory in its filesystem (PGDATA). */
const PGDATA = "/pglite/data";
const BLOCK = 512;

interface TarEntry {
  path: string;
  directory: boolean;
  data: Uint8Array;
}

/** The entries of a ustar archive (what PGlite's `dumpDataDir` writes): files and folders. */
export function readTar(tar: Uint8Array): TarEntry[] {
  const entries: TarEntry[] = [];
  const text = (from: number, length: number) => {
    const field = tar.subarray(from, from + length);
    const end = field.indexOf(0);
    return Buffer.from(end === -1 ? field : field.subarray(0, end)).toString("utf8");
  };
  for (let at = 0; at + BLOCK <= tar.length;) {
    const name = text(at, 100);
    // Two zero blocks end the archive; the first name is empty there.
    if (name === "") break;
    const prefix = text(at + 345, 155);
    const size = parseInt(text(at + 124, 12).trim() || "0", 8);
    const type = String.fromCharCode(tar[at + 156]!);
    const path = `${prefix ? `${prefix}/` : ""}${name}`;
    at += BLOCK;
    if (type === "0" || type === "\0") entries.push({ path, directory: false, data: tar.subarray(at, at + size) });
    else if (type === "5") entries.push({ path, directory: true, data: new Uint8Array(0) });
    else throw new Error(`the template's tar holds an entry of type ${JSON.stringify(type)} (${path})`);
    at += Math.ceil(size / BLOCK) * BLOCK;
  }
  return entries;
}

type Options = Parameters<MemoryFS["init"]>[1];
type PreRun = NonNullable<Options["preRun"]>[number];

/** PGlite's in-memory filesystem, holding a copy of the template's data directory from the start. */
class TemplateFS extends MemoryFS {
  private readonly entries: readonly TarEntry[];

  constructor(entries: readonly TarEntry[]) {
    super();
    this.entries = entries;
  }

  override async init(pg: PGlite, options: Options) {
    const { emscriptenOpts } = await super.init(pg, options);
    const fill: PreRun = (mod) => {
      for (const entry of this.entries) {
        const path = `${PGDATA}/${entry.path.replace(/^\/+/, "").replace(/\/+$/, "")}`;
        if (entry.directory) mod.FS.mkdirTree(path);
        else {
          const folder = path.slice(0, path.lastIndexOf("/"));
          if (!mod.FS.analyzePath(folder).exists) mod.FS.mkdirTree(folder);
          mod.FS.writeFile(path, entry.data);
        }
      }
    };
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), fill] } };
  }
}

// The template's entries, read once per test worker (the path names the template's version).
let read: { path: string; entries: TarEntry[] } | null = null;

/** A filesystem for a new PGlite that starts as a copy of the template dumped at `tarPath`. */
export function templateFs(tarPath: string): MemoryFS {
  // A plain Uint8Array, not the Buffer readFileSync gives: the filesystem copies a file's bytes
  // with `slice`, which on a Buffer is a view, and each database would write into the template.
  if (read?.path !== tarPath) read = { path: tarPath, entries: readTar(new Uint8Array(readFileSync(tarPath))) };
  return new TemplateFS(read.entries);
}
