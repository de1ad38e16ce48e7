/**
 * A TCP proxy in front of a database server that holds every chunk the server sends for a while
 * (settable at any moment): a slow database, or a slow network to it, as the client sees it. Order
 * is kept: a chunk never overtakes one received before it, even when the delay drops.
 */
import { createConnection, createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

export interface DelayProxy {
  readonly port: number;
  /** Every chunk from the server from now on reaches the client `ms` later. */
  setDelay(ms: number): void;
  close(): Promise<void>;
}

export async function delayProxy(target: { host: string; port: number }): Promise<DelayProxy> {
  let delayMs = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(target);
    sockets.add(client).add(upstream);
    // One queue and one timer a connection: a timer each would reorder chunks, since Node orders
    // timers of different lengths by an event-loop clock that lags Date.now() by however long the
    // loop's turn has run.
    const held: { at: number; chunk: Buffer | null }[] = [];
    let timer: NodeJS.Timeout | null = null;
    const release = () => {
      timer = null;
      while (held.length > 0 && held[0]!.at <= Date.now()) {
        const { chunk } = held.shift()!;
        // null: the server closed, and every chunk before it is out.
        if (chunk === null) client.end();
        else if (!client.destroyed) client.write(chunk);
      }
      if (held.length > 0) timer = setTimeout(release, held[0]!.at - Date.now());
    };
    const hold = (chunk: Buffer | null) => {
      held.push({ at: Math.max(Date.now() + delayMs, held.at(-1)?.at ?? 0), chunk });
      if (!timer) release();
    };
    client.on("data", (chunk) => upstream.write(chunk));
    upstream.on("data", (chunk: Buffer) => hold(chunk));
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      hold(null);
      upstream.destroy();
    };
    upstream.on("close", end);
    upstream.on("error", end);
    client.on("close", () => {
      if (timer) clearTimeout(timer);
      upstream.destroy();
    });
    client.on("error", () => upstream.destroy());
    client.on("close", () => sockets.delete(client));
    upstream.on("close", () => sockets.delete(upstream));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    setDelay(ms) {
      delayMs = ms;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
