/**
 * A primary and its streaming replica, both private clusters (private-postgres.ts): the replica is
 * a `pg_basebackup -R` of the primary on a port of its own. Replication is synchronous (every
 * commit waits for the replica to have it), as a deployment that fails over without losing a
 * committed write runs it.
 */
import { join } from "node:path";
import { clusterBase, clusterIn, pgRunner, startPrivatePostgres, type PrivatePostgres } from "./private-postgres.ts";

// Commits wait for the standby's flush; any standby counts (there is one).
const SYNCHRONOUS = ["synchronous_commit=on", "synchronous_standby_names='*'"];

export interface ReplicatedPostgres {
  primary: PrivatePostgres;
  replica: PrivatePostgres;
  /** A multi-host URL over both, for whichever accepts writes. */
  url: string;
  /** `pg_ctl promote -w`: resolves when the replica accepts writes. */
  promote(): Promise<void>;
  destroy(): void;
}

export async function startReplicated(): Promise<ReplicatedPostgres> {
  const primary = await startPrivatePostgres({ settings: SYNCHRONOUS });
  let replica: PrivatePostgres | null = null;
  try {
    const base = clusterBase();
    const dataDir = join(base, "data");
    const pg = pgRunner();
    await pg.run("pg_basebackup", [
      ...["-D", dataDir, "-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres"],
      ...["-X", "stream", "-R", "--no-sync"],
    ]);
    replica = await clusterIn(base, dataDir, { settings: ["hot_standby=on"] });
    const standby = replica;
    return {
      primary,
      replica: standby,
      url: `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/postgres?target_session_attrs=read-write`,
      async promote() {
        await pg.run("pg_ctl", ["-D", dataDir, "-w", "promote"]);
      },
      destroy() {
        standby.destroy();
        primary.destroy();
      },
    };
  } catch (err) {
    replica?.destroy();
    primary.destroy();
    throw err;
  }
}
