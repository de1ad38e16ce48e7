/**
 * The agent's side of the wake bench, in its own process so that no system under test shares its
 * event loop: an HTTP server that takes POSTs whose JSON body names the moment they were due
 * (`scheduledFor` as missiond's webhook sends it, or `due` in ms from the peers' handlers) and a
 * key, and records receipt time minus that moment. GET /samples answers what it recorded and
 * forgets it. It prints its port on stdout once listening.
 */
import { createServer } from "node:http";

let samples: { key: string; lateMs: number }[] = [];

const server = createServer((req, res) => {
  if (req.method === "GET") {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(samples));
    samples = [];
    return;
  }
  const received = Date.now();
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
      scheduledFor?: string;
      due?: number;
      cronJobId?: string;
      key?: string;
    };
    const due = body.due ?? Date.parse(body.scheduledFor ?? "");
    samples.push({ key: body.key ?? `${body.cronJobId}@${body.scheduledFor}`, lateMs: received - due });
    res.end("ok");
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`${typeof address === "object" && address ? address.port : 0}\n`);
});
