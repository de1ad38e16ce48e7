/**
 * Finds where a source file builds SQL, from its syntax tree (comments and strings never count):
 * a value imported from drizzle-orm, a schema table or `rows` imported, a statement begun on a
 * database or transaction (`db.select(`, `tx.execute(`, `this.deps.db.insert(` …) or SQL text
 * handed to the embedded database's client (`pglite.exec(`), drizzle's
 * `sql` tag or `sql.raw`/`sql.join`. A `.select(` or `.delete(` on anything else (a Map, a Set,
 * an HTTP client) is not a statement. Also finds the strings that name pg-boss's own schema.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { is, Table } from "drizzle-orm";
import ts from "typescript";
import * as schema from "../../src/db/schema/index.ts";

export interface SqlSite {
  /** The function (or `Class.method`) that builds it; `(imports)` for an import. */
  where: string;
  line: number;
  what: string;
}

// What a query starts from: drizzle's builders on the database or an open transaction.
const STATEMENT_METHODS = new Set([
  "select",
  "selectDistinct",
  "selectDistinctOn",
  "insert",
  "update",
  "delete",
  "execute",
  "with",
  "$count",
]);
const DATABASE_NAMES = new Set(["db", "tx"]);
// The embedded database's own client, which takes SQL text.
const PGLITE_METHODS = new Set(["exec", "query"]);

const isTable = (name: string): boolean => is((schema as Record<string, unknown>)[name], Table);

/** A `const f = () => …` (or `function`), or a module-level constant: what a reader looks for. */
const namesAFunction = (declaration: ts.VariableDeclaration): boolean =>
  (declaration.initializer !== undefined &&
    (ts.isArrowFunction(declaration.initializer) || ts.isFunctionExpression(declaration.initializer))) ||
  ts.isSourceFile(declaration.parent.parent.parent);

/** The name of the nearest named function, method or variable holding `node`. */
function enclosingName(node: ts.Node): string {
  for (let at: ts.Node | undefined = node.parent; at; at = at.parent) {
    if (ts.isFunctionDeclaration(at) && at.name) return at.name.text;
    if ((ts.isMethodDeclaration(at) || ts.isGetAccessor(at) || ts.isPropertyDeclaration(at)) && at.name) {
      const owner = ts.isClassLike(at.parent) && at.parent.name ? `${at.parent.name.text}.` : "";
      return owner + at.name.getText();
    }
    if (ts.isConstructorDeclaration(at) && ts.isClassLike(at.parent) && at.parent.name)
      return `${at.parent.name.text}.constructor`;
    if (ts.isVariableDeclaration(at) && ts.isIdentifier(at.name) && namesAFunction(at)) return at.name.text;
  }
  return "(module)";
}

/** The last name of a receiver: `db` for `db`, `this.db`, `deps.db`, `this.deps.db`. */
function lastName(expression: ts.Expression): string | null {
  if (ts.isNonNullExpression(expression)) return lastName(expression.expression);
  if (ts.isIdentifier(expression)) return expression.text;
  if (ts.isPropertyAccessExpression(expression)) return expression.name.text;
  return null;
}

function importSites(node: ts.ImportDeclaration, line: number): SqlSite[] {
  const from = (node.moduleSpecifier as ts.StringLiteral).text;
  const clause = node.importClause;
  if (!clause || clause.isTypeOnly) return [];
  const bindings = clause.namedBindings;
  const values =
    bindings && ts.isNamedImports(bindings)
      ? bindings.elements.filter((e) => !e.isTypeOnly).map((e) => (e.propertyName ?? e.name).text)
      : [];
  const anyValue = clause.name !== undefined || (bindings !== undefined && ts.isNamespaceImport(bindings));
  const sites: SqlSite[] = [];
  if (from === "drizzle-orm" || from.startsWith("drizzle-orm/")) {
    if (anyValue || values.length > 0) sites.push({ where: "(imports)", line, what: `imports ${from}` });
  } else if (/\/db\/schema\/[\w-]+\.ts$/.test(from)) {
    for (const name of values.filter(isTable)) sites.push({ where: "(imports)", line, what: `imports table ${name}` });
  } else if (/\/db\/client\.ts$/.test(from) && values.includes("rows")) {
    sites.push({ where: "(imports)", line, what: "imports rows()" });
  }
  return sites;
}

const parse = (fileName: string, text: string) =>
  ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);

/** Every place `text` (a file's source, or its syntax tree) builds SQL. */
export function sqlSites(fileName: string, text: string | ts.SourceFile): SqlSite[] {
  const source = typeof text === "string" ? parse(fileName, text) : text;
  const sites: SqlSite[] = [];
  const lineOf = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      sites.push(...importSites(node, lineOf(node)));
      return;
    }
    if (ts.isTaggedTemplateExpression(node) && ts.isIdentifier(node.tag) && node.tag.text === "sql")
      sites.push({ where: enclosingName(node), line: lineOf(node), what: "sql`…`" });
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const method = node.expression.name.text;
      const receiver = node.expression.expression;
      if (ts.isIdentifier(receiver) && receiver.text === "sql")
        sites.push({ where: enclosingName(node), line: lineOf(node), what: `sql.${method}(…)` });
      else if (
        (STATEMENT_METHODS.has(method) && DATABASE_NAMES.has(lastName(receiver) ?? "")) ||
        (PGLITE_METHODS.has(method) && lastName(receiver) === "pglite")
      )
        sites.push({
          where: enclosingName(node),
          line: lineOf(node),
          what: `${receiver.getText(source)}.${method}(…)`,
        });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return sites;
}

/** The string literals and template texts of `text` that name pg-boss's schema (`pgboss.`). */
export function bossSchemaSites(fileName: string, text: string | ts.SourceFile): SqlSite[] {
  const source = typeof text === "string" ? parse(fileName, text) : text;
  const sites: SqlSite[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node))
      if (/\bpgboss\./.test(node.text)) {
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        sites.push({ where: enclosingName(node), line, what: "names pgboss.*" });
      }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return sites;
}

/** The TypeScript files under `dir`, as paths relative to `root` with forward slashes. */
export function sourceFiles(root: string, dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".d.ts"))
    .map((e) => relative(root, join(e.parentPath, e.name)).split("\\").join("/"))
    .sort();
}

/** A file's syntax tree, parsed once however many scans read it. */
const parsed = new Map<string, ts.SourceFile>();
export function readSource(root: string, file: string): ts.SourceFile {
  const path = join(root, file);
  let source = parsed.get(path);
  if (!source) parsed.set(path, (source = parse(file, readFileSync(path, "utf8"))));
  return source;
}
