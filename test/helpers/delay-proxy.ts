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
    let lastAt = 0;
    client.on("data", (chunk) => upstream.write(chunk));
    upstream.on("data", (chunk) => {
      const at = Math.max(Date.now() + delayMs, lastAt);
      lastAt = at;
      const send = () => {
        if (!client.destroyed) client.write(chunk);
      };
      if (at <= Date.now()) send();
      else setTimeout(send, at - Date.now());
    });
    const end = () => {
      // The server's last chunks may still be held: close after them.
      setTimeout(() => client.destroy(), Math.max(0, lastAt - Date.now()));
      upstream.destroy();
    };
    upstream.on("close", end);
    upstream.on("error", end);
    client.on("close", () => upstream.destroy());
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
