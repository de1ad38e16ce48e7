/**
 * Loaded into the soak's PGlite daemon with `--import` (never by the product): the embedded
 * database lives inside the daemon's process, so the soak cannot open it beside it. This keeps a
 * reference to the instance the daemon creates and answers read-only SQL on SOAK_PROBE_SOCKET,
 * which is how the soak counts rows and reads lateness from the ledger on that backend.
 */
import { createServer } from "node:http";
import { PGlite } from "@electric-sql/pglite";

const socketPath = process.env.SOAK_PROBE_SOCKET;
// SOAK_SLOW_MS: print each embedded statement that held the daemon's thread at least this long.
const slowMs = Number(process.env.SOAK_SLOW_MS ?? 0);

/**
 * The embedded database runs on the daemon's own thread, so a statement that takes 300 ms delays
 * every timer by as much. Each protocol exchange is timed; the SQL is the last one parsed.
 */
function timeStatements(db: PGlite): void {
  const raw = db.execProtocolRawSync.bind(db);
  const decoder = new TextDecoder();
  let lastSql = "";
  db.execProtocolRawSync = (message: Uint8Array) => {
    const type = String.fromCharCode(message[0] ?? 0);
    if (type === "Q") lastSql = decoder.decode(message.subarray(5, 200));
    if (type === "P") {
      const afterName = message.indexOf(0, 5) + 1;
      lastSql = decoder.decode(message.subarray(afterName, afterName + 200));
    }
    const started = performance.now();
    const reply = raw(message);
    const ms = performance.now() - started;
    if (ms >= slowMs)
      process.stderr.write(
        `slow-statement ${new Date().toISOString()} ${Math.round(ms)} ms ${lastSql.replace(/\s+/g, " ").slice(0, 140)}\n`,
      );
    return reply;
  };
}
if (socketPath) {
  let instance: PGlite | null = null;
  const create = PGlite.create.bind(PGlite);
  PGlite.create = (async (...args: Parameters<typeof PGlite.create>) => {
    const created = await create(...args);
    instance = created;
    if (slowMs > 0) timeStatements(created);
    return created;
  }) as typeof PGlite.create;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      if (!instance) {
        res.writeHead(503).end("no database yet");
        return;
      }
      instance
        .query((JSON.parse(body) as { sql: string }).sql)
        .then((result) => res.end(JSON.stringify(result.rows)))
        .catch((err: Error) => res.writeHead(500).end(err.message));
    });
  });
  server.listen(socketPath);
  // The probe must not keep a stopping daemon alive.
  server.unref();
}
