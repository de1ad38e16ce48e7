/**
 * A test whose system prerequisite (a Debian package, root, a second Postgres cluster) is missing
 * skips, naming it. Under CI, which installs every prerequisite (.ci/run), the same absence fails
 * the file instead: a green CI has run every such test.
 */
export function prerequisite<T>(missing: T): T {
  if (missing && process.env.CI) throw new Error(`CI must provide this test's prerequisite: ${String(missing)}`);
  return missing;
}
