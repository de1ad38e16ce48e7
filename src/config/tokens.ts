import { readFileSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { MissiondError } from "../errors.ts";
import type { AgentPeer, CallerScope } from "../api/caller.ts";

export interface ApiTokenConfig {
  readonly name: string;
  readonly scope: CallerScope;
  readonly token: string;
  /** An agent-scoped token's `agents`: whose sessions it reaches (absent: none). */
  readonly agents?: readonly string[] | undefined;
}

interface RawToken {
  name: string;
  scope: CallerScope;
  token_env?: string | undefined;
  token_file?: string | undefined;
  token?: string | undefined;
  agents?: string[] | undefined;
}

const MIN_LENGTH = 16;
/** What `api_token` is called among the named tokens. */
export const DEFAULT_TOKEN_NAME = "default";

const invalid = (key: string, problem: string) =>
  new MissiondError("CONFIG_INVALID", `invalid configuration:\n  ${key}: ${problem}`);

/**
 * `[[api.tokens]]` with each value read from its variable or file, plus `api_token` as an operator
 * token named "default" (what it always was). Names and values must be unique: a name is the actor
 * the ledger records, and one value under two names would make that a guess.
 */
export function resolveTokens(
  legacy: string | undefined,
  raw: readonly RawToken[],
  env: Readonly<Record<string, string | undefined>>,
  base: string,
): { tokens: ApiTokenConfig[]; warnings: string[] } {
  const tokens: ApiTokenConfig[] = [];
  const warnings: string[] = [];
  if (legacy) tokens.push({ name: DEFAULT_TOKEN_NAME, scope: "operator", token: legacy });
  raw.forEach((entry, i) => {
    const key = `api.tokens[${i}]`;
    if (tokens.some((t) => t.name === entry.name))
      throw invalid(
        `${key}.name`,
        entry.name === DEFAULT_TOKEN_NAME && legacy
          ? `"${DEFAULT_TOKEN_NAME}" is api_token's name; choose another`
          : `"${entry.name}" is used twice`,
      );
    const token = valueOf(entry, key, env, base);
    if (token.length < MIN_LENGTH) throw invalid(key, `the token must be at least ${MIN_LENGTH} characters`);
    if (tokens.some((t) => t.token === token))
      throw invalid(key, `token "${entry.name}" has the same value as another token`);
    if (entry.token !== undefined)
      warnings.push(
        `${key}.token: token "${entry.name}" is written in the configuration file; prefer token_env or token_file`,
      );
    // An operator reaches every agent: a list on its token would read as a limit it does not have.
    if (entry.agents !== undefined && entry.scope !== "agent")
      throw invalid(`${key}.agents`, `only an agent-scoped token names agents; "${entry.name}" is ${entry.scope}`);
    tokens.push({ name: entry.name, scope: entry.scope, token, agents: entry.agents });
  });
  return { tokens, warnings };
}

/**
 * `[[api.peers]]`: the agents each socket uid speaks for. A uid listed twice would make its agents
 * a guess, and one that is also an operator uid is an operator (it reaches everything), so both
 * are refused rather than silently resolved.
 */
export function resolvePeers(
  raw: readonly { uid: number; agents: string[] }[] | undefined,
  operatorUids: readonly number[],
): AgentPeer[] | undefined {
  if (raw === undefined) return undefined;
  raw.forEach((entry, i) => {
    if (raw.findIndex((other) => other.uid === entry.uid) !== i)
      throw invalid(`api.peers[${i}].uid`, `uid ${entry.uid} is listed twice`);
    if (operatorUids.includes(entry.uid))
      throw invalid(`api.peers[${i}].uid`, `uid ${entry.uid} is in operator_uids: an operator reaches every agent`);
  });
  return raw.map((entry) => ({ uid: entry.uid, agents: entry.agents }));
}

function valueOf(
  entry: RawToken,
  key: string,
  env: Readonly<Record<string, string | undefined>>,
  base: string,
): string {
  if (entry.token !== undefined) return entry.token;
  if (entry.token_env !== undefined) {
    const value = env[entry.token_env];
    if (!value) throw invalid(`${key}.token_env`, `${entry.token_env} is not set`);
    return value;
  }
  const path = isAbsolute(entry.token_file!) ? entry.token_file! : resolve(base, entry.token_file!);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw invalid(`${key}.token_file`, `cannot read ${path}: ${(err as Error).message}`);
  }
  // One trailing newline is what `echo` and editors leave; anything else is part of the token.
  return text.replace(/\r?\n$/, "");
}
