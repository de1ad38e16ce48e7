import { JOB_FORM_FIELDS, type Job, type JobFormField } from "../../api.ts";
import { h } from "../../dom.ts";

/** One control of the job form, made from its field's entry in the job table. */
export interface Control {
  field: JobFormField;
  element: HTMLElement;
  /** The value as the API takes it: undefined when left empty, null when cleared. */
  read(): unknown;
}

type Input = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

function inputOf(field: JobFormField, value: unknown, describedBy: string): Input {
  const common = { name: field.name, id: `field-${field.name}`, "aria-describedby": describedBy };
  switch (field.input) {
    case "checkbox":
      return h("input", { ...common, type: "checkbox", checked: value === true });
    case "choice":
      return h(
        "select",
        common,
        ...(field.options ?? []).map((o) => h("option", { value: o, selected: o === value }, o)),
      );
    case "textarea":
      return h(
        "textarea",
        { ...common, rows: field.name === "prompt" ? 5 : 2 },
        typeof value === "string" ? value : "",
      );
    case "integer":
      return h("input", {
        ...common,
        type: "number",
        step: 1,
        min: field.min ?? undefined,
        max: field.max ?? undefined,
        value: value === null || value === undefined ? "" : String(value),
      });
    case "instant":
    case "text":
      return h("input", {
        ...common,
        type: "text",
        placeholder: field.input === "instant" ? "2026-01-31T09:00:00Z" : "",
        value: typeof value === "string" ? value : "",
      });
  }
}

function readInput(field: JobFormField, input: Input): unknown {
  if (field.input === "checkbox") return (input as HTMLInputElement).checked;
  const text = input.value.trim();
  if (text === "") return undefined;
  return field.input === "integer" ? Number(text) : text;
}

/** A control per field; a new job shows each default, an edited job its current values. */
export function controls(job: Job | null): Control[] {
  return JOB_FORM_FIELDS.filter((f) => !(job && f.addOnly)).map((field) => {
    const current = job ? (job as unknown as Record<string, unknown>)[field.name] : field.default;
    const helpId = `help-${field.name}`;
    const input = inputOf(field, current, helpId);
    const help = h("small", { id: helpId, class: "muted" }, job ? field.editHelp : field.help);
    const label = h("label", { for: input.id }, field.label, field.required ? h("span", { class: "req" }, " *") : null);
    const element = h(
      "div",
      { class: `field field-${field.input}`, "data-field": field.name },
      field.input === "checkbox" ? [input, label] : [label, input],
      help,
    );
    return { field, element, read: () => readInput(field, input) };
  });
}

/** A new job's body: every value given, with what each implies. */
export function addBody(all: Control[]): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const c of all) {
    const value = c.read();
    if (value === undefined || (c.field.input === "checkbox" && value === c.field.default)) continue;
    Object.assign(body, { [c.field.name]: value }, c.field.implies?.given);
  }
  return body;
}

/** An edit's body: only what changed; an emptied clearable field is null (cleared). */
export function editBody(job: Job, all: Control[]): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const current = job as unknown as Record<string, unknown>;
  for (const c of all) {
    const before = current[c.field.name] ?? undefined;
    let value = c.read();
    if (value === undefined && before !== undefined) value = c.field.clearable ? null : undefined;
    if (value === undefined || value === before) continue;
    Object.assign(body, { [c.field.name]: value }, value === null ? c.field.implies?.cleared : c.field.implies?.given);
  }
  return body;
}
