/**
 * The free space of the filesystem that holds the database's files, for readiness and `doctor`.
 * A full disk leaves reads working and refuses every write (53100), so a database ping alone says
 * "ready" while nothing can fire. The embedded database's files are in its data directory; a
 * server's are in its database's tablespace, which the daemon sees only when the server runs on
 * the same machine (or the directory is mounted here): otherwise there is nothing to measure and
 * nothing is reported.
 */
import { statfsSync } from "node:fs";
import { sql } from "drizzle-orm";
import { rows, type Database } from "./client.ts";

// Below this many free bytes (or 1 % of a smaller filesystem), the disk counts as full: Postgres
// needs room for a page or a WAL segment, not for a margin an operator would choose.
const FULL_BELOW_BYTES = 16 * 1024 * 1024;

export interface DiskSpace {
  path: string;
  freeBytes: number;
  totalBytes: number;
  full: boolean;
}

/** The filesystem of `path`, or null when it cannot be read here. */
export function diskSpaceAt(path: string): DiskSpace | null {
  try {
    const fs = statfsSync(path);
    const freeBytes = fs.bavail * fs.bsize;
    const totalBytes = fs.blocks * fs.bsize;
    return { path, freeBytes, totalBytes, full: freeBytes < Math.min(FULL_BELOW_BYTES, totalBytes / 100) };
  } catch {
    return null;
  }
}

/**
 * Where the database's files are: the embedded data directory, or a server database's tablespace
 * (its data directory for the default tablespace, when the role may read that setting); null when
 * the server does not say.
 */
export async function databaseFilesPath(database: Database, dataDir: string | null): Promise<string | null> {
  if (database.kind === "pglite") return dataDir;
  const [row] = await rows<{ location: string | null }>(
    database.db,
    sql`select coalesce(nullif(pg_tablespace_location(d.dattablespace), ''),
                        current_setting('data_directory', true)) as location
        from pg_database d where d.datname = current_database()`,
  );
  return row?.location || null;
}

/**
 * The database's disk, measured on each call (a statfs takes microseconds) once its path is known;
 * the path is asked of the server once, as a tablespace does not move under a running database.
 */
export function databaseDisk(database: Database, dataDir: string | null): () => Promise<DiskSpace | null> {
  let path: Promise<string | null> | null = null;
  return async () => {
    path ??= databaseFilesPath(database, dataDir).catch(() => {
      path = null; // asked again next time: the server may have been away
      return null;
    });
    const at = await path;
    return at === null ? null : diskSpaceAt(at);
  };
}
