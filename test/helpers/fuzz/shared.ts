/** What the fuzz cases are made of: the case and id types, the route helpers and the context every section adds to. */
import type { z } from "zod";
import type { ApiRoute } from "../../../src/api/route.ts";
import { apiRoutes } from "../../../src/api/routes/index.ts";
import { RUNTIME_HOOK_CONTEXTS, type RuntimeHook } from "../../../src/plugins/contexts.ts";
import { bodyExamples, hookExamples, queryExamples } from "../api-examples.ts";

export interface FuzzIds {
  /** An active cron job whose next slot is far away. */
  cronJob: string;
  session: string;
  todo: string;
  timer: string;
  clear: string;
  /** An agent set over the API, and one of the config file. */
  apiAgent: string;
  configAgent: string;
}

export interface FuzzCase {
  name: string;
  method: string;
  /** Already percent-encoded where it needs to be. */
  path: string;
  headers: Record<string, string | string[]>;
  body?: Buffer;
  /** A body of this many bytes, sent with a Content-Length or chunked. */
  bigBody?: { bytes: number; chunked: boolean };
  status: number[];
  /** The error message must match. */
  message: RegExp;
}

/** mulberry32: a small seeded generator. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const JSON_TYPE = { "content-type": "application/json" };
export const key = (route: ApiRoute) => `${route.method} ${route.url}`;
export const esc = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
export const json = (value: unknown) => Buffer.from(JSON.stringify(value));

/** What each bigint-id route calls its object in "no X with id". */
export function idKind(route: ApiRoute): string | null {
  // A 64-bit id's kind is what idParams (src/api/params.ts) was made for: "The run's id: …".
  const id = (route.params as { shape?: Record<string, { meta(): { description?: string } | undefined }> } | undefined)
    ?.shape?.id;
  const described = id?.meta()?.description?.match(/^The (.+)'s id: a 64-bit integer/);
  return described ? described[1]! : null;
}

export function fill(route: ApiRoute, params: Record<string, string>): string {
  return route.url.replace(/:(\w+)/g, (_, name: string) => params[name] ?? `:${name}`);
}

/** Paths of every string inside a value, for planting NUL characters. */
export function stringPaths(value: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (typeof value === "string") return [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringPaths(v, [...path, i]));
  if (value && typeof value === "object")
    return Object.entries(value).flatMap(([k, v]) => stringPaths(v, [...path, k]));
  return [];
}

export function setAt(value: unknown, path: (string | number)[], leaf: unknown): unknown {
  if (path.length === 0) return leaf;
  const [head, ...rest] = path;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string | number, unknown>;
  copy[head!] = setAt(copy[head!], rest, leaf);
  return copy;
}

/** A random JSON value (seeded), nested a little. */
export function randomJson(rand: () => number, depth = 0): unknown {
  const pick = Math.floor(rand() * (depth > 2 ? 5 : 7));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return rand() < 0.5;
    case 2:
      return [0, -1, 1e308, -1e-308, 2 ** 63, 0.5, 123456789][Math.floor(rand() * 7)];
    case 3:
      return ["", " ", "\u0000", "🙂", "x".repeat(300), "DROP TABLE cron_jobs;", "../../etc/passwd", "%00", "\\u0000"][
        Math.floor(rand() * 9)
      ];
    case 4:
      return String(Math.floor(rand() * 1e6));
    case 5:
      return Array.from({ length: Math.floor(rand() * 4) }, () => randomJson(rand, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: 1 + Math.floor(rand() * 4) }, () => [
          ["id", "name", "texts", "delaySeconds", "sessionId", "executor", "zz", "__proto__x"][Math.floor(rand() * 8)]!,
          randomJson(rand, depth + 1),
        ]),
      );
  }
}

export type AddCase = (c: Omit<FuzzCase, "headers"> & { headers?: FuzzCase["headers"] }) => void;

/** What every section of cases reads, and where it adds its cases. */
export interface FuzzContext {
  ids: FuzzIds;
  maxDelaySeconds: number;
  bodyLimit: number;
  /** The seeded generator, drawn from in the order the sections run. */
  rand: () => number;
  routes: ApiRoute[];
  bodies: ReturnType<typeof bodyExamples>;
  queries: ReturnType<typeof queryExamples>;
  hooks: ReturnType<typeof hookExamples>;
  add: AddCase;
  /** Path parameters that exist, so the input under test is what the request gets wrong. */
  goodParams(route: ApiRoute, hook?: RuntimeHook): Record<string, string>;
  /** Whether the daemon's own schema refuses a body for the route (so sending it must change nothing). */
  refused(route: ApiRoute, value: unknown, hook?: RuntimeHook): boolean;
  /** The hook whose example context `value` is (systemPrompt when none). */
  hookOf(value: Record<string, unknown>): RuntimeHook;
}

/** The id of an object of the route's kind that exists. */
function existingId(ids: FuzzIds, route: ApiRoute): string {
  const kind = idKind(route);
  if (kind === "cron job") return ids.cronJob;
  if (kind === "session clear") return ids.clear;
  if (kind === "notify timer") return ids.timer;
  if (kind === "todo") return ids.todo;
  return route.url.startsWith("/v1/agents") ? ids.apiAgent : ids.session;
}

export function fuzzContext(
  options: { ids: FuzzIds; maxDelaySeconds: number; bodyLimit: number; seed: number },
  cases: FuzzCase[],
): FuzzContext {
  const { ids, maxDelaySeconds, bodyLimit } = options;
  const hooks = hookExamples(ids.session);
  return {
    ids,
    maxDelaySeconds,
    bodyLimit,
    rand: seeded(options.seed),
    routes: apiRoutes({ maxDelaySeconds }),
    bodies: bodyExamples({ maxDelaySeconds, sessionId: ids.session }),
    queries: queryExamples(),
    hooks,
    add: (c) => cases.push({ headers: {}, ...c }),
    goodParams: (route, hook = "systemPrompt") => ({ id: encodeURIComponent(existingId(ids, route)), hook }),
    refused: (route, value, hook) => {
      const schema = route.url === "/v1/hooks/:hook" ? RUNTIME_HOOK_CONTEXTS[hook ?? "systemPrompt"] : route.body!;
      return !(schema as z.ZodType).safeParse(value).success;
    },
    hookOf: (value) =>
      (Object.entries(hooks).find(([, v]) => JSON.stringify(v) === JSON.stringify(value))?.[0] as
        RuntimeHook | undefined) ?? "systemPrompt",
  };
}
