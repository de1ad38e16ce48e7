import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { REPO_ROOT } from "./transcripts/daemon.ts";
import { explain, runPage } from "./transcripts/run.ts";

/**
 * `npm run docs`: regenerates docs/cli.md and docs/api.md, and every page's transcripts from a
 * real daemon. `--check` writes nothing: it prints what differs and exits 1 if anything does.
 * Pages named on the command line are the only ones run (`npm run docs -- --check docs/jobs.md`);
 * `--no-references` skips cli.md and api.md, `--no-transcripts` the pages.
 */

/**
 * The generated pages and their generators, imported only when run: the transcripts need none of
 * the code the references are built from.
 */
export const GENERATED: Record<string, () => Promise<string>> = {
  "docs/cli.md": async () => (await import("./cli-reference.ts")).cliReference(),
  "docs/api.md": async () => (await import("./api-reference.ts")).apiReference(),
};

/** The pages whose transcripts are run: the README and every page under docs/ but the generated ones. */
export function docPages(): string[] {
  const pages = [join(REPO_ROOT, "README.md")];
  const visit = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.name.endsWith(".md") && !(path.slice(REPO_ROOT.length + 1) in GENERATED)) pages.push(path);
    }
  };
  visit(join(REPO_ROOT, "docs"));
  return pages;
}

const readOr = (path: string) => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
};

async function references(check: boolean): Promise<boolean> {
  let ok = true;
  for (const [file, generate] of Object.entries(GENERATED)) {
    const path = join(REPO_ROOT, file);
    const text = await generate();
    if (readOr(path) === text) continue;
    if (check) {
      ok = false;
      console.log(`${file}: not current; run npm run docs`);
    } else {
      writeFileSync(path, text);
      console.log(`${file}: written`);
    }
  }
  return ok;
}

async function transcripts(pages: string[], check: boolean): Promise<boolean> {
  let ok = true;
  for (const path of pages) {
    const started = Date.now();
    const result = await runPage(path);
    if (!result.transcripts) continue;
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(
      `${result.page}: ${result.transcripts} transcript(s), ${result.commands.length} command(s) in ${seconds}s; ` +
        `${result.failed.length} failed, ${result.stale.length} differ`,
    );
    for (const c of result.commands.filter((c) => !c.same || c.code !== c.expectedExit))
      console.log(explain(result.page, c));
    if (result.failed.length) ok = false;
    if (result.stale.length) {
      if (check) ok = false;
      else if (readOr(path) !== result.source) {
        // Edited while its commands ran: writing would undo the edit.
        ok = false;
        console.log(`${result.page}: changed while its transcripts ran; not rewritten, run again`);
      } else {
        writeFileSync(path, result.text);
        console.log(`${result.page}: transcripts rewritten`);
      }
    }
  }
  return ok;
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: {
      check: { type: "boolean", default: false },
      "no-references": { type: "boolean", default: false },
      "no-transcripts": { type: "boolean", default: false },
    },
    allowPositionals: true,
  });
  let ok = true;
  if (!values["no-references"]) ok = (await references(values.check)) && ok;
  if (!values["no-transcripts"]) {
    const pages = positionals.length ? positionals.map((p) => resolve(p)) : docPages();
    ok = (await transcripts(pages, values.check)) && ok;
  }
  return ok ? 0 : 1;
}

if (import.meta.main) process.exitCode = await main();
