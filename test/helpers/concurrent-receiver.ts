import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A webhook agent that answers each mission after `holdMs` and records how many it was answering
 * at once: the largest number is what a concurrency limit is judged by, at the receiving end.
 */
export async function concurrentReceiver(holdMs: number) {
  const state = { current: 0, max: 0, total: 0 };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      state.current++;
      state.total++;
      state.max = Math.max(state.max, state.current);
      setTimeout(() => {
        state.current--;
        res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
      }, holdMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The config of a webhook agent `hook` posting to `url`. */
export const hookAgent = (url: string) => `[agents.hook]\nexecutor = "webhook"\nurl = "${url}"\ntimeout = "10s"\n`;
