import { cpSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * `count` copies of one plugin folder under distinct names (a chain of identical handlers);
 * `manifest` adds fields to each copy's plugin.json (a gateway plugin's `config`).
 */
export function pluginCopies(dir: string, count: number, manifest: Record<string, unknown> = {}): string[] {
  const root = mkdtempSync(join(tmpdir(), "missiond-bench-plugins-"));
  return Array.from({ length: count }, (_, i) => {
    const target = join(root, `copy-${i}`);
    cpSync(dir, target, { recursive: true });
    writeFileSync(join(target, "plugin.json"), JSON.stringify({ ...manifest, name: `copy-${i}`, order: i }));
    return target;
  });
}
