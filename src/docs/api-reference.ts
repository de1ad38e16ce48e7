import { openApiDocument } from "../api/openapi.ts";
import { fileSchema } from "../config/schema.ts";
import { cell, slug } from "./markdown.ts";
import { resolver, schemaSummary, typeOf, withConstraints, type JsonSchema, type Resolve } from "./schema-table.ts";

/**
 * docs/api.md: the OpenAPI document (/v1/openapi.json) for people. Grouped by tag, each operation
 * with its method, path, scope, summary, description, parameters, request body fields and answers;
 * a response schema is rendered as a table of its fields wherever the document has one.
 */

/** The document a daemon with the default configuration serves. */
export function defaultDocument(): JsonSchema {
  const defaults = fileSchema.parse({});
  // 1 MiB: the API listener's body limit, which no configuration key changes.
  return openApiDocument({ maxDelaySeconds: defaults.notify.max_delay / 1000, bodyLimit: 1024 * 1024 });
}

interface Operation extends JsonSchema {
  tags?: string[];
  summary?: string;
  description?: string;
  parameters?: (JsonSchema & { $ref?: string })[];
  requestBody?: { required?: boolean; description?: string; content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<string, JsonSchema>;
  "x-missiond-scope"?: string;
  "x-missiond-reaches"?: unknown;
}

const title = (method: string, path: string) => `${method.toUpperCase()} ${path}`;

function parameterRows(parameters: JsonSchema[], resolve: Resolve): string[] {
  if (!parameters.length) return [];
  const rows = parameters.map((raw) => {
    const p = (typeof raw.$ref === "string" ? resolve(raw.$ref) : raw) ?? raw;
    const schema = (p.schema ?? {}) as JsonSchema;
    const description = withConstraints(String(p.description ?? schema.description ?? ""), schema);
    return `| \`${String(p.name)}\` | ${String(p.in)} | ${cell(typeOf(schema))} | ${p.required ? "yes" : ""} | ${cell(String(description))} |`;
  });
  return [
    "Parameters:",
    "",
    "| Name | In | Type | Required | Description |",
    "| --- | --- | --- | --- | --- |",
    ...rows,
    "",
  ];
}

function contentSection(content: Record<string, { schema?: JsonSchema }> | undefined, resolve: Resolve): string[] {
  const out: string[] = [];
  for (const [type, { schema }] of Object.entries(content ?? {})) {
    const summary = schema ? schemaSummary(schema, resolve) : [];
    out.push(`\`${type}\`${summary.length ? ":" : ""}`, "");
    if (summary.length) out.push(...summary, "");
  }
  return out;
}

function responseRows(responses: Record<string, JsonSchema>, resolve: Resolve): string[] {
  const out: string[] = ["Answers:", ""];
  for (const [status, raw] of Object.entries(responses)) {
    const answer = (typeof raw.$ref === "string" ? resolve(raw.$ref) : raw) ?? raw;
    out.push(`- **${status}** ${cell(String(answer.description ?? ""))}`);
    // The error answers share one schema, described once under Errors.
    if (typeof raw.$ref === "string") continue;
    const content = contentSection(answer.content as Record<string, { schema?: JsonSchema }> | undefined, resolve);
    if (content.some((line) => line.startsWith("|") || line.startsWith("An array"))) {
      out.push("");
      out.push(...content.map((line) => (line ? `  ${line}` : line)));
    }
  }
  return [...out, ""];
}

function operationSection(method: string, path: string, op: Operation, resolve: Resolve): string[] {
  const out = [`### ${title(method, path)}`, "", `${op.summary ?? ""}`.trim(), ""];
  const scope = op["x-missiond-scope"];
  const reaches = op["x-missiond-reaches"];
  const facts = [`Scope: \`${scope ?? "?"}\``];
  if (reaches !== undefined)
    facts.push(`reaches: \`${typeof reaches === "string" ? reaches : JSON.stringify(reaches)}\``);
  out.push(`${facts.join("; ")}.`, "");
  if (op.description) out.push(op.description, "");
  out.push(...parameterRows(op.parameters ?? [], resolve));
  if (op.requestBody) {
    const body = op.requestBody;
    out.push(
      `Request body (${body.required ? "required" : "optional"}; ${(body.description ?? "JSON").replace(/\.$/, "")}):`,
      "",
    );
    out.push(...contentSection(body.content, resolve));
  }
  out.push(...responseRows(op.responses ?? {}, resolve));
  return out;
}

const METHODS = ["get", "put", "post", "patch", "delete"] as const;

/** The whole page. */
export function apiReference(document: JsonSchema = defaultDocument()): string {
  const resolve = resolver(document);
  const info = document.info as { title: string; version: string; description?: string };
  const paths = document.paths as Record<string, Partial<Record<(typeof METHODS)[number], Operation>>>;
  const tags = (document.tags ?? []) as { name: string; description?: string }[];
  const byTag = new Map<string, string[][]>(tags.map((t) => [t.name, []]));
  const index = new Map<string, string[]>(tags.map((t) => [t.name, []]));
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? "other";
      if (!byTag.has(tag)) {
        byTag.set(tag, []);
        index.set(tag, []);
      }
      byTag.get(tag)!.push(operationSection(method, path, op, resolve));
      index.get(tag)!.push(`[${title(method, path)}](#${slug(title(method, path))})`);
    }
  }
  const out = [
    "# API reference",
    "",
    "The HTTP API of the daemon, on its Unix socket (and the TCP listener when one is configured).",
    "This page is generated from the OpenAPI document the daemon serves at `GET /v1/openapi.json`",
    `(version ${info.version}, with the default configuration's limits) by \`npm run docs\`.`,
    "",
    info.description ?? "",
    "",
    "| Tag | Operations |",
    "| --- | --- |",
    ...[...index].map(([tag, ops]) => `| [${tag}](#${slug(tag)}) | ${ops.join(", ")} |`),
    "",
  ];
  for (const [tag, sections] of byTag) {
    out.push(`## ${tag}`, "");
    const description = tags.find((t) => t.name === tag)?.description;
    if (description) out.push(description, "");
    for (const section of sections) out.push(...section);
  }
  out.push(...componentsSection(document, resolve));
  return `${out.join("\n").trimEnd()}\n`;
}

/** The shared error answers and the named schemas the operations refer to. */
function componentsSection(document: JsonSchema, resolve: Resolve): string[] {
  const components = (document.components ?? {}) as {
    schemas?: Record<string, JsonSchema>;
    responses?: Record<string, JsonSchema>;
  };
  const out = ["## Errors", "", "Every error answer has this body:", ""];
  out.push(...schemaSummary({ $ref: "#/components/schemas/Error" }, resolve), "");
  out.push("| Status | When |", "| --- | --- |");
  for (const [name, response] of Object.entries(components.responses ?? {}))
    out.push(`| ${name.replace(/^E/, "")} | ${cell(String(response.description ?? ""))} |`);
  out.push("", "## Schemas", "");
  for (const [name, schema] of Object.entries(components.schemas ?? {})) {
    if (name === "Error") continue;
    out.push(`### ${name}`, "");
    if (typeof schema.description === "string") out.push(schema.description, "");
    const summary = schemaSummary(schema, resolve);
    out.push(...(summary.length ? summary : [`Type: ${typeOf(schema)}.`]), "");
  }
  return out;
}
