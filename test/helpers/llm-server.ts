import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

/** A request the server received, its body parsed. */
export interface LlmRequest {
  readonly api: "openai" | "anthropic";
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Record<string, unknown>;
}

/** How to answer one request; everything optional. */
export interface LlmReply {
  /** Free text (the answer to a plain request). */
  text?: string;
  /** The structured answer to a decision request: JSON content (OpenAI) or the tool's input (Anthropic). */
  structured?: unknown;
  usage?: { input: number; output: number };
  /** An error status, answered with the API's own error body. */
  status?: number;
  error?: string;
  /** Wait this long before answering. */
  delayMs?: number;
}

export interface LlmServer {
  /** Base URLs as a provider config wants them. */
  readonly openaiUrl: string;
  readonly anthropicUrl: string;
  readonly requests: LlmRequest[];
  /** Sets how the next requests are answered (n counts requests from 1 since the last reset). */
  answer(fn: (request: LlmRequest, n: number) => LlmReply): void;
  reset(): void;
  close(): Promise<void>;
}

const lastUserText = (body: Record<string, unknown>) => {
  const messages = (body.messages ?? []) as { role: string; content: string }[];
  return [...messages].reverse().find((m) => m.role === "user")?.content ?? "";
};

const optionsOf = (request: LlmRequest): string[] => {
  const schema =
    request.api === "openai"
      ? (request.body.response_format as { json_schema?: { schema?: unknown } } | undefined)?.json_schema?.schema
      : (request.body.tools as { input_schema?: unknown }[] | undefined)?.[0]?.input_schema;
  return ((schema as { properties?: { choice?: { enum?: string[] } } } | undefined)?.properties?.choice?.enum ??
    []) as string[];
};

const isDecision = (request: LlmRequest) =>
  request.api === "openai" ? request.body.response_format !== undefined : request.body.tools !== undefined;

/** By default: echo the last user message; choose the first option with a reason. */
const defaultReply = (request: LlmRequest): LlmReply => ({
  text: `echo: ${lastUserText(request.body)}`,
  structured: { choice: optionsOf(request)[0], reason: "the first option" },
});

/**
 * A model provider on 127.0.0.1 speaking both protocols, in the real response shapes:
 * `POST /v1/chat/completions` (OpenAI-compatible: choices[0].message, finish_reason, usage with
 * prompt/completion tokens; json_schema output as the message's JSON content) and
 * `POST /v1/messages` (Anthropic: content blocks, stop_reason, usage with input/output tokens;
 * a forced tool answered with a tool_use block). Like the real ones it refuses an Anthropic
 * request without anthropic-version or max_tokens. Records every request.
 */
export async function startLlmServer(): Promise<LlmServer> {
  const requests: LlmRequest[] = [];
  let reply: (request: LlmRequest, n: number) => LlmReply = defaultReply;
  let served = 0;
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString("utf8")));
    req.on("end", () => {
      const api = req.url === "/v1/chat/completions" ? "openai" : req.url === "/v1/messages" ? "anthropic" : null;
      const send = (status: number, json: unknown) =>
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(json));
      if (req.method !== "POST" || !api) return send(404, { error: { message: `no route ${req.method} ${req.url}` } });
      const request: LlmRequest = {
        api,
        path: req.url!,
        headers: req.headers,
        body: JSON.parse(raw) as Record<string, unknown>,
      };
      requests.push(request);
      if (api === "anthropic" && (!req.headers["anthropic-version"] || typeof request.body.max_tokens !== "number")) {
        return send(400, {
          type: "error",
          error: { type: "invalid_request_error", message: "anthropic-version and max_tokens are required" },
        });
      }
      const planned = { ...defaultReply(request), ...reply(request, ++served) };
      setTimeout(() => {
        if (res.destroyed) return;
        if (planned.status && planned.status >= 400) {
          const message = planned.error ?? `failure ${planned.status}`;
          return send(
            planned.status,
            api === "openai"
              ? { error: { message, type: "server_error", param: null, code: null } }
              : { type: "error", error: { type: "api_error", message } },
          );
        }
        send(200, answerBody(request, planned));
      }, planned.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    openaiUrl: `${base}/v1`,
    anthropicUrl: base,
    requests,
    answer(fn) {
      reply = fn;
    },
    reset() {
      requests.length = 0;
      reply = defaultReply;
      served = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function answerBody(request: LlmRequest, reply: LlmReply): unknown {
  const usage = reply.usage ?? { input: 10, output: 5 };
  const model = request.body.model;
  const decision = isDecision(request);
  if (request.api === "openai") {
    return {
      id: "chatcmpl-test",
      object: "chat.completion",
      created: 1_700_000_000,
      model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: decision ? JSON.stringify(reply.structured) : reply.text,
            refusal: null,
          },
          logprobs: null,
          finish_reason: "stop",
        },
      ],
      usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
    };
  }
  const tool = (request.body.tool_choice as { name?: string } | undefined)?.name;
  return {
    id: "msg_test",
    type: "message",
    role: "assistant",
    model,
    content: decision
      ? [{ type: "tool_use", id: "toolu_test", name: tool, input: reply.structured }]
      : [{ type: "text", text: reply.text }],
    stop_reason: decision ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: { input_tokens: usage.input, output_tokens: usage.output },
  };
}
