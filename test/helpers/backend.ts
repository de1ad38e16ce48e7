/** The server Postgres when DATABASE_URL is set; otherwise tests run on embedded PGlite. */
export const SERVER_URL = process.env.DATABASE_URL || null;
export const backendName = SERVER_URL ? "postgres" : "pglite";
