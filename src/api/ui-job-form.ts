import { z } from "zod";
import { jobFieldList, type FieldSpec } from "../cron/fields.ts";

/**
 * The dashboard's job form, printed from the job table (src/cron/fields.ts) into ui/src/api-types.ts
 * beside the answers' types: a field added to the table appears in the form with its help, default
 * and kind of input, without code in the page.
 */

/** What a form control needs to know of one field: the type here and the one printed for the page. */
export const jobFormField = z.object({
  name: z.string(),
  label: z.string(),
  input: z
    .enum(["text", "textarea", "integer", "choice", "checkbox", "instant"])
    .describe("The control: a line of text, a long text, a whole number, a choice, a checkbox, an instant."),
  options: z.array(z.string()).nullable(),
  required: z.boolean(),
  clearable: z.boolean().describe("Empty on an edit sends null (the CLI's `none`)."),
  addOnly: z.boolean().describe("Only on a new job (a pause has its own action)."),
  default: z.union([z.string(), z.number(), z.boolean(), z.null()]),
  help: z.string(),
  editHelp: z.string(),
  min: z.number().nullable(),
  max: z.number().nullable(),
  implies: z
    .object({ given: z.record(z.string(), z.unknown()), cleared: z.record(z.string(), z.unknown()) })
    .nullable()
    .describe("The other fields a given value also sets, and those a cleared one sets (`sessionId` → `sessionMode`)."),
});
export type JobFormField = z.output<typeof jobFormField>;

// Longer than a line: the prompt and the description.
const LONG_TEXT = 1000;

type Schema = {
  type?: string;
  enum?: string[];
  format?: string;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
};

function inputOf(schema: Schema): JobFormField["input"] {
  if (schema.enum) return "choice";
  if (schema.type === "boolean") return "checkbox";
  if (schema.type === "integer" || schema.type === "number") return "integer";
  if (schema.format === "date-time") return "instant";
  return (schema.maxLength ?? 0) > LONG_TEXT ? "textarea" : "text";
}

/** `catchupMax` → `Catchup max`. */
const labelOf = (name: string) => {
  const words = name.replace(/([A-Z])/g, " $1").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
};

function formField(spec: FieldSpec & { api: string }): JobFormField {
  const schema = z.toJSONSchema(spec.input, { io: "input", unrepresentable: "any" }) as Schema;
  const cli = spec.cli!;
  return {
    name: spec.api,
    label: labelOf(spec.api),
    input: inputOf(schema),
    options: schema.enum ?? null,
    required: spec.required === true,
    clearable: spec.clearable === true,
    addOnly: spec.addOnly === true || cli.only === "add",
    default: (spec.default as JobFormField["default"] | undefined) ?? null,
    help: cli.help,
    // The CLI's `none` is an emptied field in the form.
    editHelp: (cli.editHelp ?? cli.help).replaceAll('"none"', "empty"),
    min: schema.minimum ?? null,
    max: schema.maximum ?? null,
    // A sample value stands for any: `implies` looks only at given or cleared.
    implies: spec.implies ? { given: spec.implies("x" as never), cleared: spec.implies(null) } : null,
  };
}

/**
 * The fields a person sets in the form: those with a flag, except a flag that only sends a fixed
 * value (`--fresh-session`), whose field another one implies.
 */
export const jobFormFields = (): JobFormField[] =>
  jobFieldList.filter((f) => f.cli && f.cli.sends === undefined && f.cli.only !== "edit").map(formField);

/**
 * The constant as ui/src/api-types.ts carries it, with its type printed from `jobFormField` by the
 * printer of the answers' types (ui-types.ts passes its own, which imports this file).
 */
export function printJobForm(typeOf: (schema: Record<string, unknown>) => string): string {
  return `/** The job table's fields as the job form shows them (src/api/ui-job-form.ts, from src/cron/fields.ts). */
export type JobFormField = ${typeOf(z.toJSONSchema(jobFormField, { io: "output" }))};

export const JOB_FORM_FIELDS: readonly JobFormField[] = ${JSON.stringify(jobFormFields(), null, 2)};
`;
}
