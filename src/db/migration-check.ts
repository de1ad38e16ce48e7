import { MissiondError } from "../errors.ts";
import type { Executor } from "./client.ts";
import type { KnownMigration } from "./migrate.ts";
import { appliedMigrations, insertMigrationNames } from "./migration-queries.ts";

/**
 * Refuses to go on when the database has a migration this release does not ship: a newer release
 * migrated it, and this one's statements may not fit its schema. Run before migrating, so nothing
 * is written.
 */
export async function refuseNewerDatabase(db: Executor, known: readonly KnownMigration[], release: string) {
  const ours = new Set(known.map((m) => m.createdAt));
  const unknown = (await appliedMigrations(db))
    .filter((row) => !ours.has(Number(row.created_at)))
    .sort((a, b) => Number(a.created_at) - Number(b.created_at));
  if (unknown.length === 0) return;
  const newest = known.at(-1)?.tag ?? "none";
  const named = unknown.map((row) =>
    row.tag
      ? `${row.tag} (applied by missiond ${row.release})`
      : `one created ${new Date(Number(row.created_at)).toISOString()} (hash ${row.hash.slice(0, 12)})`,
  );
  const releases = [...new Set(unknown.map((row) => row.release).filter((r) => r !== null))];
  const runNewer = releases.length
    ? `missiond ${releases.join(" or ")} or newer`
    : "the newer missiond that migrated it";
  throw new MissiondError(
    "CONFLICT",
    `the database has ${unknown.length === 1 ? "a migration" : `${unknown.length} migrations`} this missiond ` +
      `${release} does not know: ${named.join(", ")}; the newest it knows is ${newest}. A newer release ` +
      `migrated this database, and this one may not fit its schema, so it does not start. Run ${runNewer} on ` +
      `it, or, to go back to ${release}, restore the backup taken before the upgrade ` +
      `(docs/operations.md, "Upgrades and rollback").`,
  );
}

/**
 * Records the names of this release's migrations (applied now or before), once each: the first
 * release to start on a migration that ships it names it, so an older one can say what it lacks.
 */
export async function recordMigrationNames(db: Executor, known: readonly KnownMigration[], release: string) {
  await insertMigrationNames(
    db,
    known.map((m) => ({ created_at: m.createdAt, tag: m.tag, hash: m.hash, release })),
  );
}
