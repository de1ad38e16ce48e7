import { cell } from "./markdown.ts";

/**
 * JSON Schema, as the OpenAPI document carries it, rendered for people: a short type per field
 * and a table of an object's fields (nested objects and arrays of objects flattened with dotted
 * names), `$ref`s resolved against the document's components.
 */

export type JsonSchema = Record<string, unknown>;

/** Resolves `#/components/...` references within one document. */
export type Resolve = (ref: string) => JsonSchema | undefined;

export function resolver(document: JsonSchema): Resolve {
  return (ref) => {
    if (!ref.startsWith("#/")) return undefined;
    let node: unknown = document;
    for (const part of ref.slice(2).split("/")) node = (node as Record<string, unknown> | undefined)?.[part];
    return node as JsonSchema | undefined;
  };
}

const refName = (ref: string) => ref.split("/").pop()!;

/** A named schema, linked to its section under Schemas (its heading's anchor is its name, lower case). */
const refLink = (ref: string) => `[${refName(ref)}](#${refName(ref).toLowerCase()})`;

const code = (value: unknown) => `\`${typeof value === "string" ? value : JSON.stringify(value)}\``;

/** A field's type in a few words: `string`, `integer`, `"a" \| "b"`, `Foo[]`, `string or null`. */
export function typeOf(schema: JsonSchema | boolean): string {
  // JSON Schema's boolean schemas: anything, or nothing at all.
  if (typeof schema === "boolean") return schema ? "any" : "nothing";
  if (typeof schema.$ref === "string") return refLink(schema.$ref);
  if ("const" in schema) return code(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map(code).join(", ");
  const union = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(union)) return [...new Set(union.map(typeOf))].join(" or ");
  const type = schema.type;
  if (Array.isArray(type)) return type.join(" or ");
  if (type === "array") {
    const prefix = schema.prefixItems as JsonSchema[] | undefined;
    if (Array.isArray(prefix)) return `[${prefix.map(typeOf).join(", ")}]`;
    const inner = typeOf((schema.items ?? {}) as JsonSchema | boolean);
    return inner.includes(" ") ? `array of ${inner}` : `${inner}[]`;
  }
  if (type === "string" && typeof schema.format === "string") return `string (${schema.format})`;
  return typeof type === "string" ? type : "any";
}

/** Bounds, default and pattern of a field, as a short phrase. */
export function constraintsOf(schema: JsonSchema): string {
  const parts: string[] = [];
  const range = (min: unknown, max: unknown, unit: string) => {
    if (min !== undefined && max !== undefined) parts.push(`${String(min)}–${String(max)}${unit}`);
    else if (min !== undefined) parts.push(`at least ${String(min)}${unit}`);
    else if (max !== undefined) parts.push(`at most ${String(max)}${unit}`);
  };
  range(schema.minimum, schema.maximum, "");
  range(schema.minLength, schema.maxLength, " characters");
  range(schema.minItems, schema.maxItems, " items");
  // A date-time's format says it; its long regular expression would not help a reader.
  if (typeof schema.pattern === "string" && schema.format === undefined && schema.pattern.length <= 40)
    parts.push(`matches ${code(schema.pattern)}`);
  if ("default" in schema) parts.push(`default ${code(schema.default)}`);
  return parts.join("; ");
}

/** A description followed by the field's constraints in parentheses (or the constraints alone). */
export function withConstraints(description: string, schema: JsonSchema): string {
  const constraints = constraintsOf(schema);
  if (!constraints) return description;
  return description ? `${description} (${constraints})` : constraints;
}

export interface FieldRow {
  name: string;
  type: string;
  required: boolean;
  description: string;
}

/** The object a schema describes, through a `$ref` or an `allOf` of one. */
function objectOf(schema: JsonSchema | boolean, resolve: Resolve, seen: Set<string>): JsonSchema | undefined {
  if (typeof schema === "boolean") return undefined;
  if (typeof schema.$ref === "string") {
    if (seen.has(schema.$ref)) return undefined;
    const target = resolve(schema.$ref);
    return target ? objectOf(target, resolve, new Set([...seen, schema.$ref])) : undefined;
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length === 1)
    return objectOf(schema.allOf[0] as JsonSchema, resolve, seen);
  return schema.properties ? schema : undefined;
}

/** The fields of an object schema, nested objects flattened (`a.b`, `list[].c`) down to `depth` levels. */
export function fieldRows(schema: JsonSchema, resolve: Resolve, prefix = "", depth = 3): FieldRow[] {
  const object = objectOf(schema, resolve, new Set());
  if (!object) return [];
  const required = new Set((object.required as string[] | undefined) ?? []);
  const rows: FieldRow[] = [];
  for (const [name, raw] of Object.entries((object.properties ?? {}) as Record<string, JsonSchema | boolean>)) {
    const path = `${prefix}${name}`;
    if (typeof raw === "boolean") {
      rows.push({ name: path, type: typeOf(raw), required: required.has(name), description: "" });
      continue;
    }
    const description = withConstraints(typeof raw.description === "string" ? raw.description : "", raw);
    rows.push({ name: path, type: typeOf(raw), required: required.has(name), description });
    if (depth <= 1) continue;
    const items = raw.type === "array" && typeof raw.items === "object" ? (raw.items as JsonSchema) : undefined;
    // A named component is described once, under Schemas; an inline object is flattened here.
    if (items && !items.$ref) rows.push(...fieldRows(items, resolve, `${path}[].`, depth - 1));
    else if (!raw.$ref) rows.push(...fieldRows(raw, resolve, `${path}.`, depth - 1));
  }
  return rows;
}

/** A markdown table of an object schema's fields, or [] when the schema names no fields. */
export function fieldTable(schema: JsonSchema, resolve: Resolve): string[] {
  const rows = fieldRows(schema, resolve);
  if (!rows.length) return [];
  return [
    "| Field | Type | Required | Description |",
    "| --- | --- | --- | --- |",
    ...rows.map((r) => `| \`${r.name}\` | ${cell(r.type)} | ${r.required ? "yes" : ""} | ${cell(r.description)} |`),
  ];
}

/**
 * What a schema that is not an object with fields looks like: an array of objects renders its
 * items' fields, anything else (a string, `{ type: "object" }` without properties) its type only.
 */
export function schemaSummary(schema: JsonSchema, resolve: Resolve): string[] {
  const table = fieldTable(schema, resolve);
  if (table.length) return table;
  if (schema.type === "array" && typeof schema.items === "object") {
    const items = fieldTable(schema.items as JsonSchema, resolve);
    if (items.length) return ["An array; each item:", "", ...items];
  }
  const union = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(union) && union.every((s) => typeof s.$ref === "string"))
    return [`One of: ${union.map((s) => refLink(s.$ref as string)).join(", ")}.`];
  return [];
}
