/**
 * Loaded into the soak's PGlite daemon with `--import` (never by the product): the embedded
 * database lives inside the daemon's process, so the soak cannot open it beside it. This keeps a
 * reference to the instance the daemon creates and answers read-only SQL on SOAK_PROBE_SOCKET,
 * which is how the soak counts rows and reads lateness from the ledger on that backend.
 */
import { createServer } from "node:http";
import { PGlite } from "@electric-sql/pglite";

const socketPath = process.env.SOAK_PROBE_SOCKET;
if (socketPath) {
  let instance: PGlite | null = null;
  const create = PGlite.create.bind(PGlite);
  PGlite.create = (async (...args: Parameters<typeof PGlite.create>) => {
    const created = await create(...args);
    instance = created;
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
