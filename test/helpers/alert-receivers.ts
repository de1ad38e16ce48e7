import { createServer, type Server } from "node:http";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SMTPServer } from "smtp-server";
import { signBody } from "../../src/executors/webhook.ts";
import { tempDir } from "./tmp.ts";

/** What a webhook receiver got: each body, and whether its signature verified with the secret. */
export interface Received {
  body: Record<string, unknown>;
  verified: boolean;
}

/** An HTTP receiver on a real socket; `status` decides each answer (e.g. 503 while "down"). */
export async function httpReceiver(secret: string | null = null) {
  const got: Received[] = [];
  const state = { status: 200 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const ts = String(req.headers["x-missiond-timestamp"] ?? "");
      const verified = secret !== null && req.headers["x-missiond-signature"] === signBody(secret, ts, text);
      if (state.status === 200) got.push({ body: JSON.parse(text) as Record<string, unknown>, verified });
      res.writeHead(state.status, { "content-type": "text/plain" }).end(state.status === 200 ? "thanks" : "down");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    got,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A local SMTP server (smtp-server): every message's raw text. */
export async function smtpReceiver() {
  const mails: string[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        mails.push(Buffer.concat(chunks).toString("utf8"));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.server.address() as { port: number };
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A command route's program: appends each alert (its stdin, one JSON line) to a file. */
export function commandReceiver() {
  const dir = tempDir("alert-command");
  const out = join(dir, "alerts.jsonl");
  const script = join(dir, "receive.sh");
  writeFileSync(script, `#!/bin/sh\n{ cat; echo; } >> '${out}'\necho received\n`);
  chmodSync(script, 0o755);
  return {
    script,
    lines: (): Record<string, unknown>[] =>
      existsSync(out)
        ? readFileSync(out, "utf8")
            .split("\n")
            .filter((l) => l.trim())
            .map((l) => JSON.parse(l) as Record<string, unknown>)
        : [],
  };
}
