import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { httpPoster } from "../../src/executors/http-post.ts";

describe("the webhook poster's connections", () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("keeps every connection a wave of 300 calls opened, and the next wave opens none", async () => {
    let opened = 0;
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => res.end("ok"));
    });
    server.on("connection", () => opened++);
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const post = httpPoster(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    const wave = () =>
      Promise.all(Array.from({ length: 300 }, () => post("{}", {}, new AbortController().signal, 10_000)));
    const first = await wave();
    expect(first.every((a) => a.status === 200 && a.text === "ok")).toBe(true);
    expect(opened).toBe(300);
    // The connections go back to the pool once their answers are read.
    await new Promise((resolve) => setImmediate(resolve));
    await wave();
    expect(opened).toBe(300);
  });
});
