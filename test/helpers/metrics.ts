import { request } from "node:http";
import type { Daemon } from "../../src/daemon/daemon.ts";

/** The daemon's /metrics text, over its Unix socket. */
export function scrape(daemon: Daemon): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ socketPath: daemon.config.socketPath, path: "/metrics" }, (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve(text));
    })
      .on("error", reject)
      .end();
  });
}

/** missiond_delivery_attempts_total for one queue and lane in a scrape (0 when absent). */
export function deliveryAttempts(text: string, queue: string, lane: string): number {
  const series = `missiond_delivery_attempts_total{queue="${queue}",lane="${lane}"}`;
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
