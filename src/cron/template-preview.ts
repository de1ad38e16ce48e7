import { checkTemplate, localIso, renderTemplate } from "./template.ts";

/**
 * `cron preview --prompt`: a template rendered for an example run at `slot`, without a daemon. The
 * job and runs are examples (named so in the text), the slot and the payload are the caller's.
 */
export function previewPrompt(
  template: string,
  example: { slot: Date; timezone: string; payload?: Record<string, unknown> | undefined },
): string {
  checkTemplate(template, "--prompt");
  const payload = example.payload ?? null;
  return renderTemplate(template, {
    slot: example.slot.toISOString(),
    slot_local: localIso(example.slot, example.timezone),
    timezone: example.timezone,
    job: { id: "1", name: "example" },
    run: { id: "2" },
    trigger: payload ? "event" : "schedule",
    attempt: 1,
    previous: {
      id: "1",
      status: "Succeeded",
      finished_at: new Date(example.slot.getTime() - 60_000).toISOString(),
      output: "(the previous run's output)",
    },
    payload,
  });
}
