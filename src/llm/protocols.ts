import type { LlmProvider } from "./config.ts";

export interface ChatMessage {
  readonly role: "user" | "assistant";
  readonly content: string;
}

/** One model call, the same for both APIs. */
export interface ChatRequest {
  readonly system: string | null;
  readonly messages: readonly ChatMessage[];
  readonly model: string;
  readonly maxTokens: number;
  readonly temperature: number | null;
  /** Ask for a structured choice among these options instead of free text. */
  readonly choice?: { readonly options: readonly string[] } | undefined;
}

export interface Usage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** What the call cost in US dollars, when the provider says (an OpenAI-compatible router's `usage.cost`). */
  readonly costUsd?: number;
}

export interface ChatAnswer {
  readonly text: string;
  /** What a structured request answered (parsed JSON or the tool's input); undefined when none came. */
  readonly structured: unknown;
  readonly usage: Usage;
  readonly model: string;
  readonly stopReason: string | null;
}

export interface HttpCall {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

export const ANTHROPIC_VERSION = "2023-06-01";
/** The tool an Anthropic model is forced to call to answer a structured request. */
export const DECISION_TOOL = "record_decision";

/** The JSON schema of a decision: one of the options, and why. */
export const decisionSchema = (options: readonly string[]) => ({
  type: "object",
  properties: {
    choice: { type: "string", enum: [...options], description: "exactly one of the options" },
    reason: { type: "string", description: "one or two sentences saying why" },
  },
  required: ["choice", "reason"],
  additionalProperties: false,
});

/**
 * The HTTP request for either API. OpenAI-compatible: `POST {base_url}/chat/completions` with a
 * bearer key, the system prompt as the first message, structured output through `response_format`
 * json_schema. Anthropic: `POST {base_url}/v1/messages` with x-api-key and anthropic-version, the
 * system prompt top-level, structured output through one tool whose use is forced by tool_choice.
 */
export function buildRequest(provider: LlmProvider, request: ChatRequest): HttpCall {
  const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "missiond" };
  const messages = request.messages.map((m) => ({ role: m.role, content: m.content }));
  const temperature = request.temperature === null ? {} : { temperature: request.temperature };
  if (provider.api === "openai") {
    if (provider.apiKey) headers.authorization = `Bearer ${provider.apiKey}`;
    const body = {
      model: request.model,
      messages: request.system ? [{ role: "system", content: request.system }, ...messages] : messages,
      [provider.maxTokensField]: request.maxTokens,
      ...temperature,
      ...(request.choice
        ? {
            response_format: {
              type: "json_schema",
              json_schema: { name: "decision", strict: true, schema: decisionSchema(request.choice.options) },
            },
          }
        : {}),
    };
    return { url: `${provider.baseUrl}/chat/completions`, headers, body: JSON.stringify(body) };
  }
  if (provider.apiKey) headers["x-api-key"] = provider.apiKey;
  headers["anthropic-version"] = ANTHROPIC_VERSION;
  const body = {
    model: request.model,
    max_tokens: request.maxTokens,
    ...(request.system ? { system: request.system } : {}),
    messages,
    ...temperature,
    ...(request.choice
      ? {
          tools: [
            {
              name: DECISION_TOOL,
              description: "Record the decision: the option chosen and the reason.",
              input_schema: decisionSchema(request.choice.options),
            },
          ],
          tool_choice: { type: "tool", name: DECISION_TOOL },
        }
      : {}),
  };
  return { url: `${provider.baseUrl}/v1/messages`, headers, body: JSON.stringify(body) };
}

const count = (value: unknown) => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0);
const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object";

/** Reads a 2xx answer of either API; throws with what is missing when it is not one. */
export function parseAnswer(provider: LlmProvider, json: unknown, model: string): ChatAnswer {
  if (!isObject(json)) throw new Error("the answer is not a JSON object");
  const usage = isObject(json.usage) ? json.usage : {};
  const answeredModel = typeof json.model === "string" ? json.model : model;
  if (provider.api === "openai") {
    const choice = Array.isArray(json.choices) ? (json.choices[0] as unknown) : undefined;
    if (!isObject(choice) || !isObject(choice.message)) throw new Error("the answer has no choices[0].message");
    const content = choice.message.content;
    const text = typeof content === "string" ? content : "";
    let structured: unknown = undefined;
    try {
      structured = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON: the caller sees no structured answer and decides what that means.
    }
    return {
      text,
      structured,
      usage: {
        inputTokens: count(usage.prompt_tokens),
        outputTokens: count(usage.completion_tokens),
        ...(typeof usage.cost === "number" && Number.isFinite(usage.cost) && usage.cost >= 0
          ? { costUsd: usage.cost }
          : {}),
      },
      model: answeredModel,
      stopReason: typeof choice.finish_reason === "string" ? choice.finish_reason : null,
    };
  }
  if (!Array.isArray(json.content)) throw new Error("the answer has no content blocks");
  const blocks = json.content.filter(isObject);
  const text = blocks
    .filter((b) => b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join("");
  const tool = blocks.find((b) => b.type === "tool_use" && b.name === DECISION_TOOL);
  return {
    text,
    structured: tool?.input,
    usage: { inputTokens: count(usage.input_tokens), outputTokens: count(usage.output_tokens) },
    model: answeredModel,
    stopReason: typeof json.stop_reason === "string" ? json.stop_reason : null,
  };
}

/** The provider's own error message in an error body of either API, else the body's start. */
export function errorMessage(body: string): string {
  try {
    const json = JSON.parse(body) as unknown;
    if (isObject(json) && isObject(json.error) && typeof json.error.message === "string") return json.error.message;
  } catch {
    // Not JSON: the raw text says what it says.
  }
  return body.slice(0, 300);
}
