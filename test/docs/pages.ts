import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");

/** README.md and every markdown file under docs/, as paths relative to the repository. */
export function markdownPages(): string[] {
  const pages = ["README.md"];
  const visit = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.name.endsWith(".md")) pages.push(relative(ROOT, path));
    }
  };
  visit(join(ROOT, "docs"));
  return pages.sort();
}
