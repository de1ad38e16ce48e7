import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { getCACertificates, setDefaultCACertificates } from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { httpPoster } from "../../src/executors/http-post.ts";
import { opensslMissing } from "../helpers/tls-proxy.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const never = () => new AbortController().signal;

describe("the webhook poster", () => {
  let server: Server | undefined;
  afterEach(async () => {
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
  });

  /** A receiver on a real socket; `answer` handles each request once its body is read. */
  async function receiver(answer: (req: IncomingMessage, body: string, res: ServerResponse) => void) {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => answer(req, body, res));
    });
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it("keeps every connection a wave of 300 calls opened, and the next wave opens none", async () => {
    let opened = 0;
    const url = await receiver((_req, _body, res) => res.end("ok"));
    server!.on("connection", () => opened++);
    const post = httpPoster(`${url}/`);
    const wave = () => Promise.all(Array.from({ length: 300 }, () => post("{}", {}, never(), 10_000)));
    const first = await wave();
    expect(first.every((a) => a.status === 200 && a.text === "ok")).toBe(true);
    expect(opened).toBe(300);
    // The connections go back to the pool once their answers are read.
    await new Promise((resolve) => setImmediate(resolve));
    await wave();
    expect(opened).toBe(300);
  });

  it("sends the body, its headers, the path and query as given, and reads any status with its text", async () => {
    const seen: { method?: string; url?: string; headers: IncomingMessage["headers"]; body: string }[] = [];
    const url = await receiver((req, body, res) => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      res.statusCode = body.includes("refuse") ? 422 : 201;
      res.end("é".repeat(70_000));
    });
    const post = httpPoster(`${url}/hooks/agent?team=ops&x=1`);
    const body = JSON.stringify({ prompt: "wake ☀", pad: "x".repeat(100_000) });
    const made = await post(body, { "content-type": "application/json", "x-missiond-timestamp": "17" }, never());
    expect(made).toEqual({ status: 201, text: "é".repeat(70_000) });
    expect((await post("refuse", {}, never())).status).toBe(422);
    expect(seen[0]).toMatchObject({ method: "POST", url: "/hooks/agent?team=ops&x=1", body });
    expect(seen[0]!.headers).toMatchObject({
      "content-type": "application/json",
      "x-missiond-timestamp": "17",
      "content-length": String(Buffer.byteLength(body)),
    });
  });

  it("ends at its timeout with a TimeoutError and closes the call the receiver was holding", async () => {
    let held: IncomingMessage | undefined;
    const url = await receiver((req) => (held = req));
    const post = httpPoster(url);
    const started = Date.now();
    const err = (await post("{}", {}, never(), 200).catch((e: unknown) => e)) as Error;
    expect(err.name).toBe("TimeoutError");
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    await waitFor(() => held?.socket.destroyed === true, "the held call's connection closed");
  });

  it("ends with the signal's reason when stopped, and sends nothing when stopped before", async () => {
    let calls = 0;
    const url = await receiver(() => calls++);
    const post = httpPoster(url);
    const stopping = new AbortController();
    const pending = post("{}", {}, stopping.signal, 60_000);
    await waitFor(() => calls === 1, "the call received");
    stopping.abort(new Error("the run was cancelled"));
    await expect(pending).rejects.toThrow("the run was cancelled");

    const stopped = new AbortController();
    stopped.abort(new Error("already stopped"));
    await expect(post("{}", {}, stopped.signal)).rejects.toThrow("already stopped");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(calls).toBe(1);
  });

  it("fails with the connection's error where nothing listens", async () => {
    const url = await receiver(() => {});
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
    const err = (await httpPoster(url)("{}", {}, never(), 5_000).catch((e: unknown) => e)) as NodeJS.ErrnoException;
    expect(err.code).toBe("ECONNREFUSED");
  });

  it.skipIf(opensslMissing !== null)(
    `posts over https to a certificate the process trusts${opensslMissing ? ` (skipped: ${opensslMissing})` : ""}`,
    async () => {
      const dir = tempDir("poster-tls");
      const [key, cert] = [join(dir, "key.pem"), join(dir, "cert.pem")];
      const args = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1"];
      execFileSync("openssl", [...args, "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], {
        stdio: "ignore",
      });
      const trusted = getCACertificates("default");
      const tls = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
        req.resume();
        req.on("end", () => res.end("over tls"));
      });
      await new Promise<void>((resolve) => tls.listen(0, "127.0.0.1", resolve));
      const url = `https://127.0.0.1:${(tls.address() as AddressInfo).port}/`;
      try {
        // Not yet trusted: refused as node:https would refuse it.
        await expect(httpPoster(url)("{}", {}, never(), 5_000)).rejects.toThrow(/self-signed|certificate/);
        setDefaultCACertificates([...trusted, readFileSync(cert, "utf8")]);
        expect(await httpPoster(url)("{}", {}, never(), 5_000)).toEqual({ status: 200, text: "over tls" });
      } finally {
        setDefaultCACertificates(trusted);
        tls.closeAllConnections();
        await new Promise((resolve) => tls.close(resolve));
      }
    },
  );
});
