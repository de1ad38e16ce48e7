import { api, ApiError } from "../../api.ts";
import type { PostPromptPreviewAnswer } from "../../api-types.ts";
import { debounce, h } from "../../dom.ts";
import type { Control } from "./controls.ts";

/** The payload box's text as a JSON object, or a sentence saying why it is not one. */
function payloadOf(text: string): { payload?: Record<string, unknown>; problem?: string } {
  if (!text) return {};
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === "object" && value !== null && !Array.isArray(value))
      return { payload: value as Record<string, unknown> };
    return { problem: 'The example payload must be a JSON object, like {"pr": 12}.' };
  } catch (err) {
    return { problem: `The example payload is not JSON: ${(err as Error).message}` };
  }
}

/**
 * `cron preview --prompt --payload`: while the prompt is a template, the prompt as the next slot's
 * run would fire it (POST /v1/prompt-preview), with an example event payload typed beside it.
 * `firstSlot` is the schedule preview's first fire time (now for a job without a schedule).
 */
export function promptPreview(all: Control[], firstSlot: () => string, fail: (err: unknown) => void) {
  const read = (name: string) => all.find((c) => c.field.name === name)?.read();
  const payloadBox = h("textarea", {
    rows: 2,
    id: "example-payload",
    placeholder: '{"pr": {"title": "fix the build"}}',
  });
  const rendered = h("pre", { class: "block", "data-testid": "prompt-preview" });
  const problem = h("p", { class: "problem", "data-testid": "prompt-preview-problem" });
  const section = h(
    "section",
    { class: "preview", "aria-live": "polite", "aria-label": "Prompt preview", hidden: true },
    h("h3", null, "Prompt preview"),
    h("label", { for: "example-payload" }, "Example payload (optional, a JSON object)"),
    payloadBox,
    problem,
    rendered,
  );
  let seq = 0;

  async function update() {
    const mine = ++seq;
    const prompt = read("prompt");
    section.hidden = read("promptTemplate") !== true;
    if (section.hidden || typeof prompt !== "string") return void (rendered.textContent = "");
    const { payload, problem: bad } = payloadOf(payloadBox.value.trim());
    if (bad) return void ((problem.textContent = bad), (rendered.textContent = ""));
    const timezone = read("timezone");
    try {
      const answer = await api.post<PostPromptPreviewAnswer>("/v1/prompt-preview", {
        prompt,
        slot: firstSlot(),
        ...(typeof timezone === "string" ? { timezone } : {}),
        ...(payload ? { payload } : {}),
      });
      if (mine !== seq) return;
      problem.textContent = "";
      rendered.textContent = answer.prompt;
    } catch (err) {
      if (mine !== seq) return;
      if (!(err instanceof ApiError)) return fail(err);
      problem.textContent = err.message;
      rendered.textContent = "";
    }
  }

  const later = debounce(() => void update(), 200);
  payloadBox.addEventListener("input", later);
  for (const c of all)
    if (["prompt", "promptTemplate", "timezone"].includes(c.field.name)) {
      c.element.addEventListener("input", later);
      c.element.addEventListener("change", later);
    }
  void update();
  return { element: section, update: later };
}
