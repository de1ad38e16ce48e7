import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { headingAnchors, isExternal, linksOf, slug } from "../../src/docs/markdown.ts";
import { ROOT, markdownPages } from "./pages.ts";

const anchorsCache = new Map<string, Set<string>>();
const anchorsOf = (path: string) => {
  if (!anchorsCache.has(path)) anchorsCache.set(path, headingAnchors(readFileSync(path, "utf8")));
  return anchorsCache.get(path)!;
};

/** What is wrong with a relative link from `page`, or null when its file and heading exist. */
function brokenLink(page: string, target: string): string | null {
  const [pathPart = "", anchor] = target.split("#", 2) as [string, string | undefined];
  const file = pathPart
    ? resolve(dirname(join(ROOT, page)), decodeURIComponent(pathPart.split("?")[0]!))
    : join(ROOT, page);
  if (!existsSync(file)) return `no file ${relative(ROOT, file)}`;
  if (anchor === undefined || anchor === "" || !file.endsWith(".md") || statSync(file).isDirectory()) return null;
  // GitHub's line anchors (#L10) are valid on any file; headings are looked up in the target page.
  if (/^L\d+(-L\d+)?$/.test(anchor)) return null;
  return anchorsOf(file).has(decodeURIComponent(anchor)) ? null : `no heading #${anchor} in ${relative(ROOT, file)}`;
}

describe("links in the README and docs/", () => {
  const pages = markdownPages();

  it("finds the pages", () => {
    expect(pages).toContain("README.md");
    expect(pages.length).toBeGreaterThan(1);
  });

  it.each(pages)("every relative link of %s resolves to a file and heading", (page) => {
    const broken = linksOf(readFileSync(join(ROOT, page), "utf8"))
      .filter((link) => !isExternal(link.target))
      .map((link) => ({ ...link, problem: brokenLink(page, link.target) }))
      .filter((link) => link.problem)
      .map((link) => `${page}:${link.line}: ${link.target} (${link.problem})`);
    expect(broken).toEqual([]);
  });
});

describe("heading anchors, as GitHub makes them", () => {
  it("drops punctuation and markup, keeps hyphens and underscores, numbers repeats", () => {
    expect(slug("GET /v1/cron-jobs/{id}")).toBe("get-v1cron-jobsid");
    expect(slug("Agents, executors and `models`")).toBe("agents-executors-and-models");
    expect(slug("[The API](api.md) — v1")).toBe("the-api--v1");
    expect(slug("snake_case & Co.")).toBe("snake_case--co");
    expect([...headingAnchors("# A\n\n## A\n\n```\n# not a heading\n```\n\nB\n---\n")]).toEqual(["a", "a-1", "b"]);
  });

  it("finds links outside code only", () => {
    const links = linksOf('[a](x.md#y) `[b](no.md)`\n\n```\n[c](no.md)\n```\n[d]: ref.md\n<img src="i.png">');
    expect(links.map((l) => l.target)).toEqual(["x.md#y", "ref.md", "i.png"]);
  });
});
