/**
 * Hook calls of the other hook systems: a Python callback in its warm host process, and the
 * routes an agent runtime calls (an extension intercept chain, gateway and Python hooks) over a
 * real TCP socket, through the API's routing, validation and authentication.
 */
import { request, Agent } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { buildApi, type ApiServices } from "../src/api/app.ts";
import { tokenAuthenticator } from "../src/api/caller.ts";
import { serveDialectHook, serveIntercept } from "../src/plugins/dialects/serve.ts";
import { createLogger } from "../src/log.ts";
import { Plugins } from "../src/plugins/service.ts";
import { time, type HookRow } from "./hooks.ts";
import { pluginCopies } from "./plugin-copies.ts";

const fixture = (name: string) => fileURLToPath(new URL(`../test/fixtures/dialects/${name}`, import.meta.url));
const TOKEN = "bench-token-of-sixteen-chars";
const log = createLogger(process.env.BENCH_LOG ?? "silent");

// Each handler passes: tool-policy's callback returns None for read_file, shell-gate's tool.call
// interceptor returns undefined for `ls`, content-filter's prePrompt returns the message unchanged.
const TOOL_CALL = { tool_name: "read_file", args: { path: "README.md" }, task_id: "t1" };
const INTERCEPT = { input: { name: "shell", input: { command: "ls -la" } }, current: "allow" };
const PROMPT = { message: "what is left on the deploy?", sessionKey: "s1", agentName: "ops", channel: "tui" };

/** A keep-alive JSON POST over TCP; rejects on anything but 200. */
function poster(port: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  return (path: string, body: unknown) =>
    new Promise<unknown>((resolve, reject) => {
      const payload = JSON.stringify(body);
      const req = request(
        {
          host: "127.0.0.1",
          port,
          path,
          method: "POST",
          agent,
          headers: {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(payload),
            authorization: `Bearer ${TOKEN}`,
          },
        },
        (res) => {
          let text = "";
          res.on("data", (chunk: Buffer) => (text += chunk.toString()));
          res.on("end", () =>
            res.statusCode === 200
              ? resolve(JSON.parse(text))
              : reject(new Error(`${path}: ${res.statusCode} ${text}`)),
          );
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
}

function expectSame(got: unknown, want: unknown): void {
  if (JSON.stringify(got) !== JSON.stringify(want))
    throw new Error(`unexpected answer ${JSON.stringify(got)}, wanted ${JSON.stringify(want)}`);
}

export async function dialectHookCalls(calls: number): Promise<HookRow[]> {
  const plugins = await Plugins.start({
    dirs: [
      fixture("tool-policy"),
      ...pluginCopies(fixture("shell-gate"), 3),
      ...pluginCopies(fixture("content-filter"), 3, { config: { blockedPatterns: ["DROP TABLE"] } }),
    ],
    handlerTimeoutMs: 5_000,
    breaker: { failures: 0, cooldownMs: 0 },
    memoryLimitMb: 64,
    log,
    now: () => Date.now(),
  });
  // An operator's token: this daemon has plugins and no database, so there is no session store for
  // an agent token's confinement to look its sessions up in; these rows measure the hooks' path.
  const app = buildApi({ plugins } as unknown as ApiServices, {
    log,
    authenticate: tokenAuthenticator([{ name: "bench", scope: "operator", token: TOKEN }]),
  });
  try {
    await app.listen({ host: "127.0.0.1", port: 0 });
    const post = poster((app.server.address() as AddressInfo).port);
    const d = plugins.dialects;
    // Each path runs every handler and none ends the chain (a block would measure less work).
    expectSame(await post("/v1/intercept/tool.call", INTERCEPT), { result: "allow", endedBy: null });
    expectSame(await post("/v1/hooks/pre_tool_call", TOOL_CALL), {
      action: "allow",
      args: TOOL_CALL.args,
      changedBy: [],
    });
    expectSame(await post("/v1/hooks/prePrompt", PROMPT), { message: PROMPT.message, block: false, changedBy: [] });
    const rows: HookRow[] = [];
    rows.push(
      await time("Python pre_tool_call, 1 callback returning None (warm host process)", calls, () =>
        serveDialectHook(d, "pre_tool_call", TOOL_CALL),
      ),
    );
    rows.push(
      await time("intercept tool.call, 3 extensions (in-process call)", calls, () =>
        serveIntercept(d, "tool.call", INTERCEPT),
      ),
    );
    rows.push(
      await time("POST /v1/intercept/tool.call, 3 extensions (HTTP, TCP)", calls, () =>
        post("/v1/intercept/tool.call", INTERCEPT),
      ),
    );
    rows.push(
      await time("POST /v1/hooks/prePrompt, 3 gateway plugins (HTTP, TCP)", calls, () =>
        post("/v1/hooks/prePrompt", PROMPT),
      ),
    );
    rows.push(
      await time("POST /v1/hooks/pre_tool_call, 1 Python callback (HTTP, TCP)", calls, () =>
        post("/v1/hooks/pre_tool_call", TOOL_CALL),
      ),
    );
    return rows;
  } finally {
    await app.close();
    await plugins.stop();
  }
}
