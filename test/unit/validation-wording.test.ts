import { describe, expect, it } from "vitest";
import { z } from "zod";
import { agentSchema } from "../../src/executors/agent-config.ts";
import { validate } from "../../src/validation.ts";
import { ZOD_WORDING } from "../helpers/zod-wording.ts";

const refusal = (schema: z.ZodType, value: unknown, where?: string): string => {
  try {
    validate(schema, value, where);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("accepted");
};

describe("validation speaks in words", () => {
  const job = z
    .object({
      name: z.string().min(1),
      url: z.url(),
      limit: z.number().int().min(1).max(1000),
      kind: z.enum(["cron_job", "heartbeat"]),
      at: z.iso.datetime({ offset: true }),
      tags: z.array(z.string()).min(1),
      note: z.string().max(5),
    })
    .strict();

  it("names each field and its problem, never in zod's words", () => {
    const message = refusal(
      job,
      { name: "", url: "notaurl", limit: "abc", kind: "weekly", at: "soon", tags: [], note: "too long", agnet: 1 },
      "body",
    );
    expect(message.split("; ")).toEqual([
      "body.name: empty",
      "body.url: not a URL",
      "body.limit: not a number",
      'body.kind: must be one of "cron_job", "heartbeat"',
      "body.at: not an instant: give ISO 8601 with an offset, e.g. 2026-01-31T09:00:00Z",
      "body.tags: must not be empty",
      "body.note: must be at most 5 characters",
      'body: unknown key "agnet"',
    ]);
    expect(message).not.toMatch(ZOD_WORDING);
  });

  it("says required for a field left out, and bounds in words", () => {
    expect(refusal(job, {})).toMatch(/^name: required; url: required; limit: required; kind: required; /);
    expect(refusal(z.object({ n: z.number().int().min(1) }), { n: 0 })).toBe("n: must be at least 1");
    expect(refusal(z.object({ n: z.number().int().max(9) }), { n: 10.5 })).toMatch(/^n: /);
    expect(refusal(z.object({ n: z.number() }), { n: true })).toBe("n: not a number");
    expect(refusal(z.object({ s: z.string() }), { s: 4 })).toBe("s: must be text, not number");
  });

  it("suggests the key a misspelt one may have meant, from the schema's own keys", () => {
    expect(refusal(z.object({ timeout: z.string() }).strict(), { timeout: "1s", timout: "2s" })).toBe(
      '(input): unknown key "timout" (did you mean "timeout"?)',
    );
  });

  it("lists the tags of a discriminated union (an agent's executor)", () => {
    expect(refusal(agentSchema, { executor: "bogus" }, "body")).toBe(
      'body.executor: must be one of "log", "webhook", "command", "llm"',
    );
    expect(refusal(agentSchema, {}, "body")).toBe("body.executor: required");
  });

  it("keeps a schema's own message", () => {
    expect(refusal(z.object({ cron: z.string().min(1, "give a cron expression") }), { cron: "" })).toBe(
      "cron: give a cron expression",
    );
  });
});
