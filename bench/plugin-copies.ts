import { cpSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** `count` copies of one plugin folder under distinct names (a chain of identical handlers). */
export function pluginCopies(dir: string, count: number): string[] {
  const root = mkdtempSync(join(tmpdir(), "missiond-bench-plugins-"));
  return Array.from({ length: count }, (_, i) => {
    const target = join(root, `copy-${i}`);
    cpSync(dir, target, { recursive: true });
    writeFileSync(join(target, "plugin.json"), JSON.stringify({ name: `copy-${i}`, order: i }));
    return target;
  });
}
