/**
 * Errors that say the database cannot take work right now (read-only, out of disk, restarting,
 * unreachable), as opposed to a bug in a query. The drivers surface them differently: postgres.js
 * and PGlite put the SQLSTATE on `code`, a refused or dropped connection carries a Node or
 * postgres.js code, and drizzle wraps either in a DrizzleQueryError whose `cause` is the original.
 */

// Node's socket errors and postgres.js's own connection codes.
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
]);

/** The cause named for a SQLSTATE or connection code, or null when it is not a database-availability problem. */
function causeOf(code: string): string | null {
  if (code === "25006") return "the database is read-only";
  if (code === "53100") return "the database is out of disk space";
  if (code.startsWith("53")) return `the database is out of resources (SQLSTATE ${code})`;
  if (code === "57P01" || code === "57P02") return `the database is shutting down (SQLSTATE ${code})`;
  if (code === "57P03") return "the database is starting up or not accepting connections yet (SQLSTATE 57P03)";
  if (/^08[0-9A-Z]{3}$/.test(code)) return `the connection to the database failed (SQLSTATE ${code})`;
  if (CONNECTION_CODES.has(code)) return `the database cannot be reached (${code})`;
  return null;
}

/**
 * "<cause>: <the database's own message>" when `err` (or an error in its `cause` chain) means the
 * database is unavailable for writes or at all; null otherwise.
 */
export function databaseUnavailable(err: unknown): string | null {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current instanceof Object; depth++) {
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === "string") {
      const cause = causeOf(code);
      if (cause) return typeof message === "string" && message ? `${cause}: ${message}` : cause;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}
