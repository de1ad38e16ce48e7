import type ivmModule from "isolated-vm";
import { BOOTSTRAP } from "./bootstrap.ts";

/**
 * V8's code cache of the bootstrap, made when the first isolate compiles it and given to every
 * later one: compiling its ~45 KB costs about 8 ms an isolate, reading the cache about 0.2 ms
 * (isolate loads, reloads and the memory bound's disposals all pay it). The cache is produced at
 * compile time, before the script runs, so it holds the daemon's own source only, never anything
 * a plugin did.
 */
let cache: ivmModule.ExternalCopy<ArrayBuffer> | undefined;

/** Runs the bootstrap in `context`, within `timeoutMs`. */
export async function runBootstrap(
  isolate: ivmModule.Isolate,
  context: ivmModule.Context,
  timeoutMs: number,
): Promise<void> {
  // The typings leave out what compileScript sets on the script it answers.
  const script = (await isolate.compileScript(
    BOOTSTRAP,
    cache ? { cachedData: cache } : { produceCachedData: true },
  )) as ivmModule.Script & ivmModule.CachedDataResult & { cachedDataRejected?: boolean };
  // V8 refuses a cache made under other flags; the next compile makes a new one.
  if (script.cachedDataRejected === true) cache = undefined;
  else if (!cache && script.cachedData) cache = script.cachedData;
  try {
    await script.run(context, { timeout: timeoutMs });
  } finally {
    script.release();
  }
}

/** Whether a later isolate will start from the code cache. */
export const bootstrapCached = (): boolean => cache !== undefined;
