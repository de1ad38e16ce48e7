import { describe, expect, it } from "vitest";
import {
  checkTemplate,
  localIso,
  OUTPUT_EXCERPT_CHARS,
  outputExcerpt,
  renderTemplate,
  type TemplateValues,
} from "../../src/cron/template.ts";
import { previewPrompt } from "../../src/cron/template-preview.ts";

const values = (patch: Partial<TemplateValues> = {}): TemplateValues => ({
  slot: "2026-03-01T08:00:00.000Z",
  slot_local: "2026-03-01T09:00:00.000+01:00",
  timezone: "Europe/Berlin",
  job: { id: "7", name: "inbox" },
  run: { id: "42" },
  trigger: "schedule",
  attempt: 1,
  previous: null,
  payload: null,
  ...patch,
});

const refusal = (text: string) => {
  try {
    checkTemplate(text);
  } catch (err) {
    return (err as Error).message;
  }
  return null;
};

describe("prompt templates", () => {
  it("renders every variable without HTML escaping", () => {
    const text =
      "{{slot}} {{slot_local}} {{timezone}} {{job.id}} {{job.name}} {{run.id}} {{trigger}} {{attempt}} {{payload.a}}";
    expect(checkTemplate(text)).toBeUndefined();
    expect(renderTemplate(text, values({ payload: { a: "<R&D>" } }))).toBe(
      "2026-03-01T08:00:00.000Z 2026-03-01T09:00:00.000+01:00 Europe/Berlin 7 inbox 42 schedule 1 <R&D>",
    );
  });

  it("renders the previous run as a section that is empty when there is none", () => {
    const text =
      "{{#previous}}last: {{status}} at {{finished_at}}: {{output}}{{/previous}}{{^previous}}first run{{/previous}}";
    expect(refusal(text)).toBeNull();
    expect(renderTemplate(text, values())).toBe("first run");
    const previous = { id: "41", status: "Failed", finished_at: "2026-03-01T07:00:00.000Z", output: "disk full" };
    expect(renderTemplate(text, values({ previous }))).toBe("last: Failed at 2026-03-01T07:00:00.000Z: disk full");
  });

  it("never renders a value again: a payload or an output holding a tag reaches the prompt as written", () => {
    const previous = { id: "1", status: "Succeeded", finished_at: null, output: "{{job.name}}" };
    const rendered = renderTemplate("{{payload.x}} {{previous.output}} {{{payload.x}}}", {
      ...values({ previous, payload: { x: "{{#job}}{{id}}{{/job}}" } }),
    });
    expect(rendered).toBe("{{#job}}{{id}}{{/job}} {{job.name}} {{#job}}{{id}}{{/job}}");
  });

  it("refuses an unknown variable, naming it, where it is and the nearest known one", () => {
    expect(refusal("Hello\n  {{job.nmae}}")).toBe(
      'prompt: unknown template variable "job.nmae" at line 2, column 3 (did you mean "job.name"?)',
    );
    expect(refusal("{{#previous}}{{stauts}}{{/previous}}")).toMatch(
      /unknown template variable "stauts" at line 1, column 14/,
    );
    expect(refusal("{{env.HOME}}")).toMatch(/unknown template variable "env.HOME" at line 1, column 1$/);
  });

  it("refuses a syntax error and a partial with their position", () => {
    expect(refusal("a {{slot")).toBe("prompt: template syntax: Unclosed tag (line 1, column 9)");
    expect(refusal("x\n{{#payload}}y")).toMatch(
      /^prompt: template syntax: Unclosed section "payload" \(line 2, column/,
    );
    expect(refusal("{{> header}}")).toMatch(/partial "header" at line 1, column 1: partials are not supported/);
  });

  it("keeps the end of a long output, where an answer ends", () => {
    const long = `${"a".repeat(OUTPUT_EXCERPT_CHARS)}THE END`;
    expect(outputExcerpt(long)).toHaveLength(OUTPUT_EXCERPT_CHARS);
    expect(outputExcerpt(long).endsWith("THE END")).toBe(true);
    expect(outputExcerpt(null)).toBe("");
  });

  it("writes a slot in the job's zone with that zone's offset at that instant", () => {
    expect(localIso(new Date("2026-03-01T08:00:00Z"), "Europe/Berlin")).toBe("2026-03-01T09:00:00.000+01:00");
    expect(localIso(new Date("2026-07-01T08:00:00.5Z"), "Europe/Berlin")).toBe("2026-07-01T10:00:00.500+02:00");
    expect(localIso(new Date("2026-07-01T08:00:00Z"), "America/New_York")).toBe("2026-07-01T04:00:00.000-04:00");
    expect(localIso(new Date("2026-07-01T08:00:00Z"), "Asia/Kolkata")).toBe("2026-07-01T13:30:00.000+05:30");
  });

  it("previews a template for an example run, an event's when given a payload", () => {
    const slot = new Date("2026-03-01T08:00:00Z");
    expect(
      previewPrompt("{{trigger}} {{payload.n}} {{slot_local}}", { slot, timezone: "UTC", payload: { n: 3 } }),
    ).toBe("event 3 2026-03-01T08:00:00.000+00:00");
    expect(() => previewPrompt("{{nope}}", { slot, timezone: "UTC" })).toThrow(/--prompt: unknown template variable/);
  });
});
