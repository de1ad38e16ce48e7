import { ungrantedStubs } from "../grant-check.ts";
import { permissionNames, type Grants } from "../grants.ts";
import { MAX_HOPS } from "../hooks.ts";
import { MAX_RESULT_CHARS } from "../isolate.ts";
import { PLUGIN_BUDGETS } from "./budgets.ts";
import { freshSeed } from "./seeds.ts";

/** What the bootstrap reads first in a new isolate (as `__setup`, JSON): what it may build. */
export function isolateSetup(
  plugin: string,
  grants: Grants,
  config: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string>>,
  checkedMembers: readonly string[],
): string {
  return JSON.stringify({
    members: permissionNames(grants),
    ungranted: ungrantedStubs(plugin, grants, checkedMembers),
    // Keys crypto.getRandomValues inside the isolate (rekeyed with fresh bytes every invocation).
    seed: freshSeed(),
    config,
    env,
    maxResultChars: MAX_RESULT_CHARS,
    maxHops: MAX_HOPS,
    budget: PLUGIN_BUDGETS,
  });
}
