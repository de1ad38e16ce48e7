import type { DialectPayload } from "../loader.ts";
import { failure, readClassification, readDispatch, type DispatchAnswer, type Reading } from "./results.ts";
import type { DialectRunner } from "./runner.ts";

/**
 * A Python hook its page dispatches run-all-then-pick-first: every callback runs, each with the
 * same keyword arguments and each in the decision log, and the first answer that decides (in
 * plugin order, then registration order; a shadow plugin's never does) is the hook's.
 */
async function firstAnswer<T>(
  runner: DialectRunner,
  hook: string,
  kwargs: Record<string, unknown>,
  read: (value: unknown) => Reading<T>,
): Promise<{ answer: T; plugin: string } | null> {
  let first: { answer: T; plugin: string } | null = null;
  const payload: DialectPayload = { kwargs };
  for (const member of runner.members("python", "shell-hook")) {
    const registrations = await member.handle.registrations(runner.options.handlerTimeoutMs);
    for (const reg of registrations) {
      if (reg.event !== hook || (reg as { kind?: string }).kind === "section") continue;
      let decides: T | null = null;
      await runner.call(member, hook, reg.key, payload, kwargs, (raw) => {
        const failed = failure(raw);
        if (failed) return failed;
        const reading = read((raw as { value?: unknown }).value);
        decides = reading.decides;
        return reading.verdict;
      });
      if (decides !== null && first === null && !member.shadow) first = { answer: decides, plugin: member.name };
    }
  }
  return first;
}

/**
 * POST /v1/hooks/pre_gateway_dispatch: `{ action: "skip", reason, plugin }` (drop the message),
 * `{ action: "rewrite", text, plugin }` (dispatch it with this text) or `{ action: "allow", plugin }`
 * (dispatch it as it is; `plugin` null when no callback decided). `gateway` and `session_store`,
 * the page's other arguments, are None unless the runtime sends them.
 */
export async function gatewayDispatch(
  runner: DialectRunner,
  body: Record<string, unknown>,
): Promise<DispatchAnswer & { plugin: string | null }> {
  const kwargs = { gateway: null, session_store: null, ...body };
  const first = await firstAnswer(runner, "pre_gateway_dispatch", kwargs, readDispatch);
  return first ? { ...first.answer, plugin: first.plugin } : { action: "allow", plugin: null };
}

/** POST /v1/hooks/transform_api_error_classification: `{ classification, plugin }`, both null when no callback claimed the error. */
export async function errorClassification(
  runner: DialectRunner,
  body: Record<string, unknown>,
): Promise<{ classification: Record<string, unknown> | null; plugin: string | null }> {
  const first = await firstAnswer(runner, "transform_api_error_classification", body, readClassification);
  return { classification: first?.answer ?? null, plugin: first?.plugin ?? null };
}
