import { missingProgram, prerequisite } from "./prerequisite.ts";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { connect, type AddressInfo } from "node:net";
import { join } from "node:path";
import { tempDir } from "./tmp.ts";

/** Why a TLS endpoint cannot be made here (it signs its certificate with openssl), or null. */
export const opensslMissing: string | null = prerequisite(missingProgram("openssl", ["openssl"]));

export interface ReceivedRequest {
  method: string;
  host: string;
  path: string;
  body: string;
}

/**
 * A stand-in for a fixed https:// endpoint: a TLS server with a self-signed certificate for
 * `hostname`, reached through a local HTTP proxy that tunnels every CONNECT to it. A client
 * pointed at the proxy (HTTPS_PROXY) and trusting the certificate (SSL_CERT_FILE) talks to it as
 * it would to the real host.
 */
export async function tlsEndpoint(
  hostname: string,
  /** The body of the answer to a request (default "ok"); a JSON answer is sent as application/json. */
  respond: (request: ReceivedRequest) => string | object = () => "ok",
): Promise<{
  proxyUrl: string;
  caFile: string;
  received: ReceivedRequest[];
  tunnels: string[];
  close: () => Promise<void>;
}> {
  const dir = tempDir("tls");
  const key = join(dir, "key.pem");
  const cert = join(dir, "cert.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-days",
      "1",
      "-subj",
      `/CN=${hostname}`,
      "-addext",
      `subjectAltName=DNS:${hostname}`,
    ],
    { stdio: "ignore" },
  );
  const received: ReceivedRequest[] = [];
  const tunnels: string[] = [];
  const endpoint = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const request = { method: req.method ?? "", host: req.headers.host ?? "", path: req.url ?? "", body };
      received.push(request);
      const answer = respond(request);
      if (typeof answer === "string") return void res.end(answer);
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(answer));
    });
  });
  const proxy = createHttpServer((_req, res) => {
    res.statusCode = 405;
    res.end("CONNECT only");
  });
  proxy.on("connect", (req, client) => {
    tunnels.push(req.url ?? "");
    const { port } = endpoint.address() as AddressInfo;
    const upstream = connect(port, "127.0.0.1", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
  });
  const listen = (server: Server) => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  await listen(endpoint);
  await listen(proxy);
  const close = (server: Server) =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return {
    proxyUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    caFile: cert,
    received,
    tunnels,
    close: async () => {
      await close(proxy);
      await close(endpoint);
    },
  };
}
