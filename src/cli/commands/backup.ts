import { existsSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import type { Config } from "../../config/load.ts";
import { UsageError, type CliContext } from "../context.ts";
import { EXIT, type CliIo } from "../io.ts";

/**
 * `missiond backup <file>`: the embedded database's data directory as one gzipped tarball
 * (PGlite's dumpDataDir), taken with the daemon stopped: the data directory has one writer, the
 * daemon holds its lock, and a copy taken while it writes may not open. On Postgres, pg_dump.
 */
export function registerBackup(program: Command, ctx: CliContext): void {
  program
    .command("backup")
    .description(
      "write the embedded database to <file> (a .tar.gz of its data directory) while the daemon is stopped; on Postgres use pg_dump",
    )
    .argument("<file>", "where to write the backup (must not exist)")
    .action(async (file: string) => ctx.setExit(await backupEmbedded(ctx.config(), ctx.io, file)));
}

async function backupEmbedded(config: Config, io: CliIo, file: string): Promise<number> {
  if (config.databaseUrl)
    throw new UsageError(
      "backup: missiond uses a Postgres server here (DATABASE_URL / database_url); back it up with pg_dump " +
        "(see docs/backup.md). `missiond backup` writes the embedded database only.",
    );
  const target = resolve(io.cwd, file);
  if (existsSync(target)) throw new UsageError(`backup: ${target} already exists; name a new file`);
  if (!existsSync(config.dataDir))
    throw new UsageError(`backup: there is no embedded database in ${config.dataDir} (state_dir ${config.stateDir})`);
  const [{ lockDataDir }, { openDatabase }] = await Promise.all([
    import("../../db/lock.ts"),
    import("../../db/client.ts"),
  ]);
  // Refuses, naming the daemon's pid, while a daemon has the data directory.
  const release = lockDataDir(config.stateDir, config.instanceName, io.probe);
  try {
    const database = await openDatabase({ databaseUrl: null, dataDir: config.dataDir });
    try {
      const tarball = await database.pglite!.dumpDataDir("gzip");
      const bytes = Buffer.from(await tarball.arrayBuffer());
      writeFileSync(target, bytes, { flag: "wx", mode: 0o600 });
      io.stdout(`backup of ${config.dataDir} written to ${target} (${bytes.length} bytes)\n`);
    } finally {
      await database.close();
    }
    return EXIT.OK;
  } finally {
    release();
  }
}
