import type { LlmProvider } from "./config.ts";
import { buildRequest, errorMessage, parseAnswer, type ChatAnswer, type ChatRequest, type Usage } from "./protocols.ts";

// A model's answer is text; anything this large is not one.
const MAX_ANSWER_CHARS = 4_000_000;

/** A model call that failed; `retryable` when trying again later may succeed (5xx, 408, 429, timeouts). */
export class LlmError extends Error {
  readonly retryable: boolean;
  readonly status: number | null;
  constructor(message: string, retryable: boolean, status: number | null = null, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "LlmError";
    this.retryable = retryable;
    this.status = status;
  }
}

/** One model call over HTTP, within `timeoutMs` (and `signal`, when the caller stops waiting). */
export async function chat(
  provider: LlmProvider,
  request: ChatRequest,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<ChatAnswer> {
  const call = buildRequest(provider, request);
  const who = `model provider "${provider.name}"`;
  const timeout = AbortSignal.timeout(timeoutMs);
  let response: Response;
  let text: string;
  try {
    response = await fetch(call.url, {
      method: "POST",
      headers: call.headers,
      body: call.body,
      redirect: "error",
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    text = await response.text();
  } catch (err) {
    if (timeout.aborted) throw new LlmError(`${who} did not answer within ${timeoutMs} ms`, true, null, { cause: err });
    if (signal?.aborted) throw new LlmError(`${who}: call stopped`, false, null, { cause: err });
    const cause = (err as Error).cause as Error | undefined;
    throw new LlmError(
      `${who} cannot be reached at ${call.url}: ${cause?.message ?? (err as Error).message}`,
      true,
      null,
      {
        cause: err,
      },
    );
  }
  if (!response.ok) {
    const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
    throw new LlmError(`${who} answered HTTP ${response.status}: ${errorMessage(text)}`, retryable, response.status);
  }
  if (text.length > MAX_ANSWER_CHARS)
    throw new LlmError(`${who} answered more than ${MAX_ANSWER_CHARS} characters`, false);
  try {
    return parseAnswer(provider, JSON.parse(text), request.model);
  } catch (err) {
    throw new LlmError(
      `${who} answered something that is not a ${provider.api} response: ${(err as Error).message}`,
      false,
    );
  }
}

export interface Decision {
  readonly choice: string;
  readonly reason: string;
}

const ATTEMPTS = 2;

/**
 * Asks for a structured choice among `options` and checks it: the choice must be one of them and
 * the reason a string. A model that answers otherwise is asked once more; after that the call
 * rejects, naming what came back, so a plugin gating on it fails open instead of acting on noise.
 * `call` makes one model call (the caller counts each against its budget).
 */
export async function decide(
  call: (request: ChatRequest) => Promise<ChatAnswer>,
  input: { question: string; options: readonly string[]; context: string | null },
  base: Omit<ChatRequest, "messages" | "choice" | "system"> & { system: string | null },
): Promise<Decision & { usage: Usage; model: string }> {
  const system = [
    "You make one decision. Choose exactly one of the given options and give a short reason.",
    base.system ?? "",
  ]
    .filter(Boolean)
    .join("\n\n");
  const prompt = [
    `Question: ${input.question}`,
    `Options: ${input.options.map((o) => JSON.stringify(o)).join(", ")}`,
    ...(input.context ? [`Context:\n${input.context}`] : []),
  ].join("\n\n");
  let inputTokens = 0;
  let outputTokens = 0;
  let last = "";
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const answer = await call({
      ...base,
      system,
      messages: [{ role: "user", content: prompt }],
      choice: { options: input.options },
    });
    inputTokens += answer.usage.inputTokens;
    outputTokens += answer.usage.outputTokens;
    const got = answer.structured as { choice?: unknown; reason?: unknown } | undefined;
    if (got && typeof got.choice === "string" && input.options.includes(got.choice)) {
      return {
        choice: got.choice,
        reason: typeof got.reason === "string" ? got.reason : "",
        usage: { inputTokens, outputTokens },
        model: answer.model,
      };
    }
    last =
      got === undefined ? `no structured answer (text: ${JSON.stringify(answer.text.slice(0, 200))})` : describe(got);
  }
  throw new LlmError(
    `the model did not choose one of the options (${input.options.map((o) => JSON.stringify(o)).join(", ")}) in ${ATTEMPTS} attempts; last answer: ${last}`,
    false,
  );
}

function describe(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
