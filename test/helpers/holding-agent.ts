import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { CronMission } from "../../src/executors/types.ts";

/**
 * A webhook agent that records each cron mission and, while `state.holding`, holds its answer until
 * `answerAll` (answering at once otherwise). Closing answers whatever it still holds.
 */
export async function holdingAgent(holding: boolean) {
  const received: CronMission[] = [];
  const open: ServerResponse[] = [];
  const state = { holding };
  const answer = (res: ServerResponse) => res.writeHead(200, { "content-type": "application/json" }).end("{}");
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      received.push(JSON.parse(body) as CronMission);
      if (state.holding) open.push(res);
      else answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/missions`,
    received,
    /** The run ids of the missions received, in order. */
    runIds: () => received.map((mission) => mission.runId),
    state,
    answerAll: () => {
      for (const res of open.splice(0)) answer(res);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open.splice(0)) answer(res);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
