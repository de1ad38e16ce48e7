import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { jobFormField, jobFormFields, printJobForm } from "../../src/api/ui-job-form.ts";
import { typeOf, UI_TYPES_COMMAND, UI_TYPES_PATH, uiTypesFile } from "../../src/api/ui-types.ts";

const schemaOf = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "output" }) as Record<string, unknown>;

describe("the dashboard's API types", () => {
  it("ui/src/api-types.ts is what the generator prints from the answer schemas", async () => {
    const committed = readFileSync(UI_TYPES_PATH, "utf8");
    expect(committed === (await uiTypesFile()), `ui/src/api-types.ts is stale: run \`${UI_TYPES_COMMAND}\``).toBe(true);
  });

  it("prints the job form's field type from the one schema its fields are made to", () => {
    for (const field of jobFormFields()) expect(jobFormField.strict().parse(field)).toEqual(field);
    const printed = printJobForm(typeOf);
    expect(printed).toContain(`export type JobFormField = ${typeOf(schemaOf(jobFormField))};`);
    // Each key of the schema, with its description, is in the page's type.
    for (const [key, schema] of Object.entries(jobFormField.shape)) {
      expect(printed).toMatch(new RegExp(`\\n  ${key}: `));
      if (schema.description) expect(printed).toContain(`/** ${schema.description} */`);
    }
  });

  it("prints required and optional fields, nulls, enums, tuples, records and references", () => {
    const printed = typeOf(
      schemaOf(
        z
          .object({
            id: z.string().describe("The id."),
            at: z.string().nullable(),
            kind: z.enum(["a", "b"]),
            cell: z.tuple([z.int(), z.string()]),
            tags: z.array(z.union([z.string(), z.number()])),
            settings: z.record(z.string(), z.unknown()),
            note: z.string().optional(),
            fixed: z.literal(true),
          })
          .strict(),
      ),
    );
    expect(printed).toBe(
      [
        "{",
        "  /** The id. */",
        "  id: string;",
        "  at: string | null;",
        '  kind: "a" | "b";',
        "  cell: [number, string];",
        "  tags: (string | number)[];",
        "  settings: Record<string, unknown>;",
        "  note?: string;",
        "  fixed: true;",
        "}",
      ].join("\n"),
    );
    expect(typeOf({ $ref: "#/components/schemas/Job" })).toBe("Job");
    // An open object is a TypeScript object type as it is; a catchall adds an index signature.
    expect(typeOf({ type: "object", properties: { a: { type: "integer" } }, required: ["a"] })).toBe(
      "{\n  a: number;\n}",
    );
    expect(typeOf(schemaOf(z.object({ a: z.int() }).catchall(z.unknown())))).toBe(
      "{\n  a: number;\n  [key: string]: unknown;\n}",
    );
  });
});
