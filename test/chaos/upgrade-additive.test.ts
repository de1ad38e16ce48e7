/**
 * A rolling upgrade is safe because a release's migrations only add to the schema: the previous
 * release, still running beside the new one (or started on its database), reads and writes the
 * tables it knows as before (test/chaos/upgrade.test.ts runs both). This reads every migration in
 * drizzle/ and names any statement that would break the previous release: a table or column
 * dropped or renamed, a column's type changed or made NOT NULL, a NOT NULL column added without a
 * default, a constraint or index dropped without one of the same name made again (a replaced check
 * or index passes: that a replaced check still admits every value the previous release writes is
 * the review's to see). A foreign key (drizzle names it `…_fk`) may go: without it the database
 * admits more, and no release acts on its refusal (no code reads a foreign-key violation, which the
 * last test holds). Such a change waits a release: ship the release that stops using the old
 * shape first, then drop it.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const MIGRATIONS = fileURLToPath(new URL("../../drizzle", import.meta.url));
const SOURCES = fileURLToPath(new URL("../../src", import.meta.url));

const BREAKING: [RegExp, string][] = [
  [/\bDROP\s+TABLE\b/i, "drops a table"],
  [/\bDROP\s+COLUMN\b/i, "drops a column"],
  [/\bRENAME\s+COLUMN\b/i, "renames a column"],
  [/\bALTER\s+TABLE\s+\S+\s+RENAME\s+TO\b/i, "renames a table"],
  [/\bALTER\s+COLUMN\s+\S+\s+(SET\s+DATA\s+)?TYPE\b/i, "changes a column's type"],
  [/\bSET\s+NOT\s+NULL\b/i, "makes a column NOT NULL"],
];

/** The statements of one migration's SQL that would break the release before it, each with why. */
function breakingStatements(text: string): string[] {
  const statements = text
    .split("--> statement-breakpoint")
    .flatMap((s) => s.split(/;\s*$/m))
    .map((s) => s.trim())
    .filter(Boolean);
  const found: string[] = [];
  // Names made again in the same migration: a dropped constraint or index replaced by one of that name.
  const remade = new Set(
    [
      ...text.matchAll(
        /\b(?:ADD\s+CONSTRAINT|CREATE\s+(?:UNIQUE\s+)?INDEX(?:\s+CONCURRENTLY)?(?:\s+IF\s+NOT\s+EXISTS)?|RENAME\s+TO)\s+"?([\w.]+)"?/gi,
      ),
    ].map((m) => m[1]!),
  );
  for (const statement of statements) {
    for (const [pattern, why] of BREAKING) if (pattern.test(statement)) found.push(`${why}: ${statement}`);
    if (/\bADD\s+COLUMN\b/i.test(statement) && /\bNOT\s+NULL\b/i.test(statement) && !/\bDEFAULT\b/i.test(statement))
      found.push(`adds a NOT NULL column without a default: ${statement}`);
    const dropped = /\bDROP\s+(CONSTRAINT|INDEX)\s+(?:IF\s+EXISTS\s+)?"?([\w.]+)"?/i.exec(statement);
    const foreignKey = dropped?.[1]!.toUpperCase() === "CONSTRAINT" && dropped[2]!.endsWith("_fk");
    if (dropped && !remade.has(dropped[2]!) && !foreignKey)
      found.push(`drops ${dropped[1]!.toLowerCase()} ${dropped[2]} without making it again: ${statement}`);
  }
  return found;
}

describe("migrations a previous release can run beside", () => {
  const files = readdirSync(MIGRATIONS)
    .filter((f) => f.endsWith(".sql"))
    .sort();

  it.each(files)("%s only adds to the schema", (file) => {
    expect(breakingStatements(readFileSync(join(MIGRATIONS, file), "utf8"))).toEqual([]);
  });

  it("names each kind of breaking statement, and lets a replaced check or index pass", () => {
    const breaking = [
      'DROP TABLE "plugin_generations";',
      'ALTER TABLE "cron_jobs" DROP COLUMN "description";',
      'ALTER TABLE "cron_jobs" RENAME COLUMN "prompt" TO "mission";',
      'ALTER TABLE "cron_jobs" RENAME TO "jobs";',
      'ALTER TABLE "cron_jobs" ALTER COLUMN "prompt" SET DATA TYPE jsonb;',
      'ALTER TABLE "cron_jobs" ALTER COLUMN "description" SET NOT NULL;',
      'ALTER TABLE "cron_jobs" ADD COLUMN "owner" text NOT NULL;',
      'ALTER TABLE "cron_job_runs" DROP CONSTRAINT "cron_job_runs_trigger_ck";',
      'DROP INDEX "cron_job_runs_slot_uq";',
    ];
    for (const statement of breaking) expect(breakingStatements(statement), statement).toHaveLength(1);
    expect(
      breakingStatements(
        `ALTER TABLE "t" DROP CONSTRAINT "t_kind_ck";--> statement-breakpoint
ALTER TABLE "t" ADD CONSTRAINT "t_kind_ck" CHECK (kind in ('a', 'b', 'c'));--> statement-breakpoint
ALTER TABLE "t" ADD COLUMN "n" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "t" ADD COLUMN "d" text;--> statement-breakpoint
ALTER TABLE "t" DROP CONSTRAINT "t_job_id_jobs_id_fk";`,
      ),
    ).toEqual([]);
  });

  it("no source acts on a foreign key's refusal, so dropping one breaks no release", () => {
    const files = readdirSync(SOURCES, { recursive: true, encoding: "utf8" }).filter(
      (f) => f.endsWith(".ts") && statSync(join(SOURCES, f)).isFile(),
    );
    expect(files.length).toBeGreaterThan(100);
    const acting = files.filter((f) => /23503|foreign_key_violation/.test(readFileSync(join(SOURCES, f), "utf8")));
    expect(acting).toEqual([]);
  });
});
