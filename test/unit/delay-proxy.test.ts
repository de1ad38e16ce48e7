/**
 * The slow-database drill's proxy must hold the server's bytes, never reorder them: Postgres's
 * protocol read out of order is another answer (a row of one statement taken for another's, a
 * transaction's end before its rows), which no real network does to a client.
 */
import { createConnection, createServer, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, expect, it } from "vitest";
import { delayProxy, type DelayProxy } from "../helpers/delay-proxy.ts";

const CHUNKS = 3_000;

let server: Server | null = null;
let proxy: DelayProxy | null = null;

afterAll(async () => {
  await proxy?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
});

/** Blocks the event loop for `ms`: the timers set after it see a clock the loop has not caught up with. */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

it("delivers every byte in the order the server sent it while its delay changes and the event loop stalls", async () => {
  // The server sends CHUNKS numbered 4-byte chunks, one write a turn, so they arrive as many reads.
  server = createServer((socket) => {
    let i = 0;
    const next = () => {
      if (i === CHUNKS) return socket.end();
      const chunk = Buffer.alloc(4);
      chunk.writeUInt32BE(i++);
      socket.write(chunk);
      setImmediate(next);
    };
    next();
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  proxy = await delayProxy({ host: "127.0.0.1", port: (server.address() as AddressInfo).port });

  const received: Buffer[] = [];
  const client = createConnection({ host: "127.0.0.1", port: proxy.port });
  client.on("data", (chunk) => received.push(chunk));
  // The delay changes every few milliseconds (down to 0, as when a slow spell ends), and the loop
  // stalls now and then, as on a loaded machine.
  const delays = [0, 30, 5, 60, 0, 15, 45, 1];
  let d = 0;
  const changing = setInterval(() => {
    proxy!.setDelay(delays[d++ % delays.length]!);
    if (d % 3 === 0) spin(7);
  }, 3);
  await new Promise<void>((resolve) => client.on("close", () => resolve()));
  clearInterval(changing);

  const bytes = Buffer.concat(received);
  expect(bytes.length).toBe(CHUNKS * 4);
  const outOfOrder: number[] = [];
  for (let i = 0; i < CHUNKS; i++) if (bytes.readUInt32BE(i * 4) !== i) outOfOrder.push(i);
  expect(outOfOrder.slice(0, 10)).toEqual([]);
});
