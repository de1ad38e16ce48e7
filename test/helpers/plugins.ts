import { cpSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger } from "../../src/log.ts";
import type { Decision } from "../../src/plugins/chain.ts";
import { Plugins } from "../../src/plugins/service.ts";
import { tempDir } from "./tmp.ts";

export const examplePlugin = (name: string) => fileURLToPath(new URL(`../../plugins/${name}`, import.meta.url));
export const fixturePlugin = (name: string) => fileURLToPath(new URL(`../fixtures/plugins/${name}`, import.meta.url));

/** A copy of a plugin folder with its manifest changed (e.g. another config). */
export function pluginCopy(dir: string, manifest: Record<string, unknown>): string {
  const target = join(tempDir("plugin"), basename(dir));
  cpSync(dir, target, { recursive: true });
  const path = join(target, "plugin.json");
  const current = existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : {};
  writeFileSync(path, JSON.stringify({ ...current, ...manifest }));
  return target;
}

/** Loads plugins in their workers, with no database (no host.store, no decision table). */
export async function loadTestPlugins(dirs: string[], options: { handlerTimeoutMs?: number; agents?: string[] } = {}) {
  const decisions: Decision[] = [];
  const plugins = await Plugins.start({
    dirs,
    handlerTimeoutMs: options.handlerTimeoutMs ?? 2_000,
    breaker: { failures: 0, cooldownMs: 0 },
    memoryLimitMb: 64,
    log: createLogger("silent"),
    now: () => Date.now(),
    agents: async () => (options.agents ?? []).map((id) => ({ id })),
    onDecision: (d) => decisions.push(d),
  });
  return { plugins, decisions };
}
