import { api, ApiError } from "../../api.ts";
import { debounce, fill, h } from "../../dom.ts";
import { dateTime, relative, scheduleInWords } from "../../time.ts";
import type { Control } from "./controls.ts";

const PREVIEW_COUNT = 5;

/**
 * The schedule in words and its next fire times, recomputed by the API's preview as the schedule
 * fields change (each new list handed to `onTimes`); a schedule the API refuses shows the API's own message.
 */
export function schedulePreview(
  all: Control[],
  fail: (err: unknown) => void,
  onTimes: (fireTimes: string[]) => void = () => {},
): HTMLElement {
  const value = (name: string) => {
    const v = all.find((c) => c.field.name === name)?.read();
    return typeof v === "string" ? v : null;
  };
  const words = h("p", { class: "words", "data-testid": "schedule-words" });
  const times = h("ol", { class: "slots", "data-testid": "preview-fires" });
  const problem = h("p", { class: "problem", "data-testid": "preview-problem" });
  let seq = 0;

  async function update() {
    const mine = ++seq;
    const [cron, every, timezone] = [value("cron"), value("every"), value("timezone") ?? "UTC"];
    if (!cron && !every) {
      words.textContent = "Give a cron expression or an interval.";
      onTimes([]);
      return fill(times);
    }
    words.textContent = scheduleInWords({ cron, every, activeHours: value("activeHours") });
    try {
      const query = cron ? { cron, timezone, count: PREVIEW_COUNT } : { every: every!, count: PREVIEW_COUNT };
      const { fireTimes } = await api.get<{ fireTimes: string[] }>("/v1/cron-preview", query);
      if (mine !== seq) return;
      problem.textContent = "";
      onTimes(fireTimes);
      fill(
        times,
        ...fireTimes.map((t) => h("li", null, dateTime(t, timezone), h("span", { class: "muted" }, ` ${relative(t)}`))),
      );
    } catch (err) {
      if (mine !== seq) return;
      if (!(err instanceof ApiError)) return fail(err);
      problem.textContent = err.message;
      onTimes([]);
      fill(times);
    }
  }

  const later = debounce(() => void update(), 200);
  for (const c of all)
    if (["cron", "every", "timezone", "activeHours"].includes(c.field.name)) c.element.addEventListener("input", later);
  void update();
  return h(
    "section",
    { class: "preview", "aria-live": "polite", "aria-label": "Schedule preview" },
    h("h3", null, "Schedule"),
    words,
    problem,
    h("h3", null, "Next fire times"),
    times,
  );
}
