import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXAMPLES } from "../../src/cli/examples.ts";
import { apiReference, defaultDocument } from "../../src/docs/api-reference.ts";
import { cliProgram, cliReference } from "../../src/docs/cli-reference.ts";
import { headingAnchors, slug } from "../../src/docs/markdown.ts";
import { ROOT } from "./pages.ts";

const committed = (file: string) => readFileSync(join(ROOT, file), "utf8");

describe("docs/cli.md", () => {
  it("is what npm run docs generates from the commands", async () => {
    expect(committed("docs/cli.md"), "run npm run docs").toBe(await cliReference());
  });

  it("has a section for every command, with its examples and every option's flags", async () => {
    const page = await cliReference();
    const anchors = headingAnchors(page);
    const visit = (command: ReturnType<typeof cliProgram>, path: string[]) => {
      expect(anchors, path.join(" ")).toContain(slug(["missiond", ...path].join(" ")));
      for (const option of command.options) expect(page).toContain(`\`${option.flags}\``);
      for (const sub of command.commands) visit(sub, [...path, sub.name()]);
    };
    visit(cliProgram(), []);
    for (const example of Object.values(EXAMPLES).flat()) expect(page).toContain(`\n${example}\n`);
  });
});

describe("docs/api.md", () => {
  it("is what npm run docs generates from the OpenAPI document", () => {
    expect(committed("docs/api.md"), "run npm run docs").toBe(apiReference());
  });

  it("has a section for every operation, with its scope and summary, and a table of every request body's fields", () => {
    const document = defaultDocument() as { paths: Record<string, Record<string, Record<string, unknown>>> };
    const page = apiReference();
    const anchors = headingAnchors(page);
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const title = `${method.toUpperCase()} ${path}`;
        expect(anchors, title).toContain(slug(title));
        const section = page.slice(page.indexOf(`### ${title}\n`)).split("\n### ")[0]!;
        expect(section, title).toContain(String(op.summary));
        expect(section, title).toContain(`Scope: \`${String(op["x-missiond-scope"])}\``);
        const body = (op.requestBody as { content?: Record<string, { schema: { properties?: object } }> } | undefined)
          ?.content?.["application/json"]?.schema;
        for (const field of Object.keys(body?.properties ?? {})) expect(section, title).toContain(`| \`${field}\``);
      }
    }
  });

  it("renders a response schema's fields when an answer has one", () => {
    const page = apiReference({
      openapi: "3.1.0",
      info: { title: "t", version: "1" },
      tags: [{ name: "t" }],
      paths: {
        "/v1/x": {
          get: {
            tags: ["t"],
            summary: "Get x",
            "x-missiond-scope": "public",
            responses: {
              "200": {
                description: "The x",
                content: {
                  "application/json": {
                    schema: {
                      type: "object",
                      properties: { id: { type: "string", description: "Its id." }, at: { type: ["string", "null"] } },
                      required: ["id"],
                    },
                  },
                },
              },
            },
          },
        },
      },
      components: { schemas: {}, responses: {} },
    });
    expect(page).toMatch(
      /- \*\*200\*\* The x\n\n {2}`application\/json`:\n\n {2}\| Field \| Type \| Required \| Description \|/,
    );
    expect(page).toContain("| `id` | string | yes | Its id. |");
    expect(page).toContain("| `at` | string or null |  |  |");
  });
});
