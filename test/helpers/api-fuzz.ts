/**
 * Malformed requests for every route of the API, generated from the route table that the OpenAPI
 * document is built from (apiRoutes in src/api/routes/index.ts) and the example inputs of api-examples.ts. Deterministic: the
 * few random choices come from a seeded generator, so every run sends the same requests.
 *
 * Every case is meant to be refused with a 4xx. Where a case mutates a valid input, zod (the
 * daemon's own schema) confirms the mutation is invalid, so a case never asks for a change.
 */
import { z } from "zod";
import type { ApiRoute } from "../../src/api/route.ts";
import { apiRoutes } from "../../src/api/routes/index.ts";
import { RUNTIME_HOOK_CONTEXTS, type RuntimeHook } from "../../src/plugins/contexts.ts";
import { bodyExamples, hookExamples, mutations, queryExamples } from "./api-examples.ts";

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

const JSON_TYPE = { "content-type": "application/json" };
const key = (route: ApiRoute) => `${route.method} ${route.url}`;
const esc = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** What each bigint-id route calls its object in "no X with id". */
function idKind(route: ApiRoute): string | null {
  if (route.url.startsWith("/v1/cron-jobs/:id")) return "cron job";
  if (route.url.startsWith("/v1/session-clears/")) return "session clear";
  if (route.url.startsWith("/v1/notify/:id")) return "notify timer";
  if (route.url.startsWith("/v1/todos/:id")) return "todo";
  return null;
}

function fill(route: ApiRoute, params: Record<string, string>): string {
  return route.url.replace(/:(\w+)/g, (_, name: string) => params[name] ?? `:${name}`);
}

/** Paths of every string inside a value, for planting NUL characters. */
function stringPaths(value: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (typeof value === "string") return [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringPaths(v, [...path, i]));
  if (value && typeof value === "object")
    return Object.entries(value).flatMap(([k, v]) => stringPaths(v, [...path, k]));
  return [];
}

function setAt(value: unknown, path: (string | number)[], leaf: unknown): unknown {
  if (path.length === 0) return leaf;
  const [head, ...rest] = path;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string | number, unknown>;
  copy[head!] = setAt(copy[head!], rest, leaf);
  return copy;
}

/** A random JSON value (seeded), nested a little. */
function randomJson(rand: () => number, depth = 0): unknown {
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

export function fuzzCases(options: {
  ids: FuzzIds;
  maxDelaySeconds: number;
  bodyLimit: number;
  seed: number;
}): FuzzCase[] {
  const { ids, maxDelaySeconds, bodyLimit } = options;
  const rand = seeded(options.seed);
  const routes = apiRoutes({ maxDelaySeconds });
  const bodies = bodyExamples({ maxDelaySeconds, sessionId: ids.session });
  const queries = queryExamples();
  const hooks = hookExamples(ids.session);
  const cases: FuzzCase[] = [];
  const add = (c: Omit<FuzzCase, "headers"> & { headers?: FuzzCase["headers"] }) => cases.push({ headers: {}, ...c });
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));

  /** Path parameters that exist, so the input under test is what the request gets wrong. */
  const goodParams = (route: ApiRoute, hook: RuntimeHook = "systemPrompt"): Record<string, string> => {
    const kind = idKind(route);
    const id =
      kind === "cron job"
        ? ids.cronJob
        : kind === "session clear"
          ? ids.clear
          : kind === "notify timer"
            ? ids.timer
            : kind === "todo"
              ? ids.todo
              : route.url.startsWith("/v1/agents")
                ? ids.apiAgent
                : ids.session;
    return { id: encodeURIComponent(id), hook };
  };
  /** Whether the daemon's own schema refuses a body for the route (so sending it must change nothing). */
  const refused = (route: ApiRoute, value: unknown, hook?: RuntimeHook) => {
    const schema = route.url === "/v1/hooks/:hook" ? RUNTIME_HOOK_CONTEXTS[hook ?? "systemPrompt"] : route.body!;
    return !(schema as z.ZodType).safeParse(value).success;
  };
  const hookOf = (value: Record<string, unknown>): RuntimeHook =>
    (Object.entries(hooks).find(([, v]) => JSON.stringify(v) === JSON.stringify(value))?.[0] as
      RuntimeHook | undefined) ?? "systemPrompt";

  // 1. Methods a path does not have.
  const byPath = new Map<string, Set<string>>();
  for (const route of routes)
    (byPath.get(route.url) ?? byPath.set(route.url, new Set()).get(route.url)!).add(route.method);
  for (const [path, methods] of byPath) {
    const route = routes.find((r) => r.url === path)!;
    const url = fill(route, goodParams(route));
    for (const method of ["PATCH", "PUT", "DELETE", "POST", "GET"].filter((m) => !methods.has(m)).slice(0, 2)) {
      add({
        name: `${method} ${path}: no such method`,
        method,
        path: url,
        status: [404],
        message: new RegExp(`no route ${method} `),
      });
    }
  }
  add({ name: "unknown path", method: "GET", path: "/v1/nope", status: [404], message: /no route GET \/v1\/nope/ });
  add({ name: "unversioned path", method: "GET", path: "/cron-jobs", status: [404], message: /no route/ });
  add({
    name: "malformed percent-encoding in a path",
    method: "GET",
    path: "/v1/sessions/%E0%A4%A",
    status: [400, 404],
    message: /not a valid url|no session|no route/,
  });

  for (const route of routes) {
    const good = goodParams(route);

    // 2. Ids: unknown, malformed, beyond int8, with NUL characters.
    const kind = idKind(route);
    if (kind) {
      const badIds = [
        "999999999",
        "0",
        "abc",
        "-1",
        "1.5",
        "1e3",
        "0x10",
        "%20",
        "9223372036854775808",
        "99999999999999999999",
        "%00",
        "1%00",
        "%E2%80%8F1",
        "1;drop%20table%20todos",
      ];
      for (const id of badIds) {
        const nul = id.includes("%00");
        add({
          name: `${key(route)}: id ${id}`,
          method: route.method,
          path: fill(route, { id }),
          status: nul ? [400, 404] : [404],
          message: new RegExp(`no ${kind} with id${nul ? "|params.id: contains a NUL character" : ""}`),
        });
      }
    } else if (route.url.includes("/:id") && !route.url.startsWith("/v1/agents")) {
      // Session ids: unknown ones, with a valid body where the route takes one.
      const body = bodies[key(route)]?.valid[0];
      for (const id of [
        "no-such-session",
        "%00",
        "a%00b",
        "%F0%9F%92%A5",
        "x".repeat(201),
        "..%2F..%2Fetc",
        "%C3%28",
      ]) {
        const badEncoding = id === "%C3%28";
        const nul = id.includes("%00");
        add({
          name: `${key(route)}: session ${id.slice(0, 20)}`,
          method: route.method,
          path: fill(route, { id }),
          ...(body ? { body: json(body), headers: JSON_TYPE } : {}),
          status: badEncoding ? [400, 404] : nul ? [400] : [404],
          message: badEncoding
            ? /not a valid url|no session with id/
            : nul
              ? /params.id: contains a NUL character/
              : /no session with id/,
        });
      }
    }
    if (route.url === "/v1/agents/:id") {
      const put = route.method === "PUT";
      const body = put ? { body: json({ executor: "log" }), headers: JSON_TYPE } : {};
      add({
        name: `${key(route)}: the config file's agent`,
        method: route.method,
        path: fill(route, { id: ids.configAgent }),
        ...body,
        status: [409],
        message: /config file/,
      });
      if (put) {
        for (const id of ["bad%20id", ".dot", "-dash", "a%2Fb", "%00", "x".repeat(201), "%F0%9F%92%A5"]) {
          add({
            name: `PUT agent id ${id.slice(0, 20)}`,
            method: "PUT",
            path: fill(route, { id }),
            ...body,
            status: [400],
            message: /agent id .* must be letters/,
          });
        }
      } else {
        for (const id of ["nobody", "%00", "x".repeat(201)])
          add({
            name: `DELETE agent ${id.slice(0, 20)}`,
            method: "DELETE",
            path: fill(route, { id }),
            status: [404],
            message: /no agent/,
          });
      }
    }
    if (route.url === "/v1/hooks/:hook") {
      const body = { body: json(hooks.systemPrompt), headers: JSON_TYPE };
      for (const hook of ["noSuchHook", "__proto__", "constructor", "toString", "%00", "SYSTEMPROMPT"]) {
        add({
          name: `hook ${hook}`,
          method: "POST",
          path: fill(route, { hook }),
          ...body,
          status: [404],
          message: /unknown hook/,
        });
      }
      for (const hook of ["cronJobFiring", "notifyScheduled", "sessionClearing", "todoAdded"]) {
        add({
          name: `hook ${hook} over the API`,
          method: "POST",
          path: fill(route, { hook }),
          ...body,
          status: [400],
          message: /fired by the daemon itself/,
        });
      }
      // Each hook's context sent to another hook.
      const names = Object.keys(hooks) as RuntimeHook[];
      names.forEach((hook, i) => {
        const other = names[(i + 1) % names.length]!;
        if (refused(route, hooks[other], hook))
          add({
            name: `hook ${hook} with ${other}'s context`,
            method: "POST",
            path: fill(route, { hook }),
            body: json(hooks[other]),
            headers: JSON_TYPE,
            status: [400],
            message: /: /,
          });
      });
    }

    // 3. Bodies. Methods without one still parse a JSON body when it is sent: a broken one is refused.
    const url = fill(route, good);
    if (!route.body) {
      if (route.method !== "GET") {
        add({
          name: `${key(route)}: broken JSON`,
          method: route.method,
          path: url,
          body: Buffer.from('{"x":'),
          headers: JSON_TYPE,
          status: [400],
          message: /not valid JSON/,
        });
        add({
          name: `${key(route)}: body of 10 MB`,
          method: route.method,
          path: url,
          bigBody: { bytes: 10 * 1024 * 1024, chunked: false },
          headers: JSON_TYPE,
          status: [413],
          message: /larger than the limit/,
        });
      }
    } else {
      const examples = bodies[key(route)]!;
      const broken = ["{", '{"a":}', "{'a':1}", '{"a":1}}', "[1,2", "nul", '{"a":1,}', "\u0000", "\xff\xfe{}"];
      for (const text of broken)
        add({
          name: `${key(route)}: broken JSON ${JSON.stringify(text)}`,
          method: route.method,
          path: url,
          body: Buffer.from(text, "latin1"),
          headers: JSON_TYPE,
          status: [400],
          message: /not valid JSON/,
        });
      add({
        name: `${key(route)}: empty JSON body`,
        method: route.method,
        path: url,
        body: Buffer.alloc(0),
        headers: JSON_TYPE,
        status: [400],
        message: /cannot be empty/,
      });
      const valid = json(examples.valid[0]);
      for (const type of [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/xml",
        "multipart/form-data; boundary=x",
        "application/jsonx",
        "image/png",
      ]) {
        add({
          name: `${key(route)}: content type ${type}`,
          method: route.method,
          path: url,
          body: valid,
          headers: { "content-type": type },
          status: [415],
          message: new RegExp(`content type "${esc(type)}" is not supported`),
        });
      }
      add({
        name: `${key(route)}: body without a content type`,
        method: route.method,
        path: url,
        body: valid,
        status: [415],
        message: /not supported/,
      });
      for (const value of [[], "x", 42, true, ...(route.bodyOptional ? [] : [null])]) {
        add({
          name: `${key(route)}: body ${JSON.stringify(value)}`,
          method: route.method,
          path: url,
          body: json(value),
          headers: JSON_TYPE,
          status: [400],
          message: /expected object/,
        });
      }
      add({
        name: `${key(route)}: body one byte over the limit`,
        method: route.method,
        path: url,
        bigBody: { bytes: bodyLimit + 1, chunked: false },
        headers: JSON_TYPE,
        status: [413],
        message: /larger than the limit of 1048576 bytes/,
      });
      add({
        name: `${key(route)}: body of 10 MB`,
        method: route.method,
        path: url,
        bigBody: { bytes: 10 * 1024 * 1024, chunked: false },
        headers: JSON_TYPE,
        status: [413],
        message: /larger than the limit/,
      });
      add({
        name: `${key(route)}: chunked body of 2 MB`,
        method: route.method,
        path: url,
        bigBody: { bytes: 2 * 1024 * 1024, chunked: true },
        headers: JSON_TYPE,
        status: [413],
        message: /larger than the limit/,
      });
      add({
        name: `${key(route)}: prototype pollution`,
        method: route.method,
        path: url,
        body: Buffer.from(`{"__proto__":{"admin":true},${valid.toString().slice(1)}`),
        headers: JSON_TYPE,
        status: [400],
        message: /not valid JSON|prototype/,
      });
      add({
        name: `${key(route)}: constructor.prototype`,
        method: route.method,
        path: url,
        body: Buffer.from(`{"constructor":{"prototype":{"admin":true}},${valid.toString().slice(1)}`),
        headers: JSON_TYPE,
        status: [400],
        message: /not valid JSON|prototype/,
      });
      add({
        name: `${key(route)}: nested 5000 deep`,
        method: route.method,
        path: url,
        body: Buffer.from("[".repeat(5000) + "]".repeat(5000)),
        headers: JSON_TYPE,
        status: [400],
        message: /expected object/,
      });

      for (const base of examples.valid) {
        const hook = route.url === "/v1/hooks/:hook" ? hookOf(base) : undefined;
        const path = fill(route, goodParams(route, hook));
        for (const m of mutations(base, false)) {
          if (!refused(route, m.value, hook)) continue; // still valid (an optional field left out)
          add({
            name: `${key(route)}: ${m.label}`,
            method: route.method,
            path,
            body: json(m.value),
            headers: JSON_TYPE,
            status: [400],
            message: new RegExp(esc(m.field)),
          });
        }
        for (const where of stringPaths(base)) {
          add({
            name: `${key(route)}: NUL in ${where.join(".")}`,
            method: route.method,
            path,
            body: json(setAt(base, where, "a\u0000b")),
            headers: JSON_TYPE,
            status: [400],
            message: /NUL character/,
          });
        }
        // Duplicate keys: the last one wins, and it is invalid (where the route's schema says so: a
        // free-form field such as an interceptor's input takes any JSON).
        const first = Object.keys(base)[0];
        if (first && refused(route, { ...base, [first]: { nested: [1] } }, hook)) {
          const lastWins = `${JSON.stringify(base).slice(0, -1)},${JSON.stringify(first)}:{"nested":[1]}}`;
          add({
            name: `${key(route)}: duplicate key ${first}`,
            method: route.method,
            path,
            body: Buffer.from(lastWins),
            headers: JSON_TYPE,
            status: [400],
            message: new RegExp(esc(first)),
          });
        }
      }
      for (const value of [...(examples.invalid ?? []), ...(examples.refinementOnly ?? [])]) {
        const hook = route.url === "/v1/hooks/:hook" ? "systemPrompt" : undefined;
        if (value === null && route.bodyOptional) continue;
        if (!refused(route, value, hook))
          throw new Error(`fuzz: ${key(route)} example ${JSON.stringify(value)} is valid`);
        add({
          name: `${key(route)}: ${JSON.stringify(value).slice(0, 80)}`,
          method: route.method,
          path: url,
          body: json(value),
          headers: JSON_TYPE,
          status: [400],
          message: /\S+: \S/,
        });
      }
      // Seeded garbage: random JSON the schema refuses, and random bytes.
      for (let i = 0; i < 4; i++) {
        const value = randomJson(rand);
        if (value === null && route.bodyOptional) continue;
        if (!refused(route, value)) continue;
        add({
          name: `${key(route)}: random ${JSON.stringify(value).slice(0, 60)}`,
          method: route.method,
          path: url,
          body: json(value),
          headers: JSON_TYPE,
          status: [400],
          message: /\S+: \S|NUL character/,
        });
      }
      for (let i = 0; i < 2; i++) {
        const bytes = Buffer.from(Array.from({ length: 1 + Math.floor(rand() * 64) }, () => Math.floor(rand() * 256)));
        bytes[0] = 0x7b; // "{": never valid JSON with what follows (checked below)
        let parses = true;
        try {
          JSON.parse(bytes.toString("utf8"));
        } catch {
          parses = false;
        }
        if (!parses)
          add({
            name: `${key(route)}: random bytes ${i}`,
            method: route.method,
            path: url,
            body: bytes,
            headers: JSON_TYPE,
            status: [400],
            message: /not valid JSON/,
          });
      }
    }

    // 4. Queries.
    if (route.query) {
      const examples = queries[key(route)]!;
      const q = (value: Record<string, string>) => new URLSearchParams(value).toString();
      const schema = route.query;
      const send = (name: string, query: string, message: RegExp) =>
        add({ name: `${key(route)}: ${name}`, method: route.method, path: `${url}?${query}`, status: [400], message });
      const base = examples.valid[0]!;
      send("unknown parameter", q({ ...base, zzUnknown: "1" }), /zzUnknown/);
      send("parameter with brackets", `${q(base)}&limit[]=1`, /limit\[\]/);
      for (const m of mutations(base, true)) {
        if (schema.safeParse(m.value).success) continue;
        send(m.label, q(m.value as Record<string, string>), new RegExp(esc(m.field)));
      }
      for (const value of [...(examples.invalid ?? []), ...(examples.refinementOnly ?? [])]) {
        send(JSON.stringify(value).slice(0, 60), q(value as Record<string, string>), /\S+: \S/);
      }
      for (const name of Object.keys(base)) {
        const withNul = Object.entries(base)
          .map(([k, v]) => `${encodeURIComponent(k)}=${k === name ? "a%00b" : encodeURIComponent(v)}`)
          .join("&");
        send(`NUL in ${name}`, withNul, /NUL character/);
        send(`repeated ${name}`, `${q(base)}&${name}=${encodeURIComponent(base[name]!)}`, new RegExp(esc(name)));
        send(`long ${name}`, q({ ...base, [name]: "9".repeat(3000) }), new RegExp(esc(name)));
      }
      if ("limit" in (schema as z.ZodObject).shape) {
        for (const limit of ["NaN", "Infinity", "-1", "1e309", "0", "%ZZ", "9".repeat(400)])
          send(`limit ${limit.slice(0, 10)}`, `limit=${limit}`, /limit/);
      }
    }

    // 5. Hop headers, with an otherwise valid request: only the header is wrong.
    if (route.hop) {
      const body = route.url === "/v1/hooks/:hook" ? hooks.systemPrompt : bodies[key(route)]!.valid[0];
      for (const hop of [
        "-1",
        "abc",
        "1001",
        "1.5",
        "",
        " ",
        "0x5",
        "1e3",
        "04",
        "99999999999999999999",
        "NaN",
        "\u00b2",
      ]) {
        add({
          name: `${key(route)}: hop ${JSON.stringify(hop)}`,
          method: route.method,
          path: url,
          body: json(body),
          headers: { ...JSON_TYPE, "x-missiond-hop": hop },
          status: [400],
          message: /x-missiond-hop: must be a whole number of hops/,
        });
      }
      add({
        name: `${key(route)}: two hop headers`,
        method: route.method,
        path: url,
        body: json(body),
        headers: { ...JSON_TYPE, "x-missiond-hop": ["1", "2"] },
        status: [400],
        message: /x-missiond-hop/,
      });
    }
  }

  // 6. Route-specific mistakes.
  const job = { name: "fuzz", agentId: "a1", prompt: "p" };
  for (const cron of [
    "61 * * * *",
    "* * *",
    "*/0 * * * *",
    "a b c d e",
    "* * * * * * * *",
    "0 0 32 * *",
    "0 25 * * *",
    "   ",
    "@never",
    "0 0 * * 8",
  ]) {
    add({
      name: `cron add: cron ${JSON.stringify(cron)}`,
      method: "POST",
      path: "/v1/cron-jobs",
      body: json({ ...job, cron }),
      headers: JSON_TYPE,
      status: [400],
      message: /cron/,
    });
    add({
      name: `cron preview: cron ${JSON.stringify(cron)}`,
      method: "GET",
      path: `/v1/cron-preview?${new URLSearchParams({ cron })}`,
      status: [400],
      message: /cron/,
    });
  }
  for (const timezone of ["Mars/Olympus", "UTC+25", "Europe/Berln", "../../etc/passwd", "", "Local"]) {
    add({
      name: `cron add: time zone ${JSON.stringify(timezone)}`,
      method: "POST",
      path: "/v1/cron-jobs",
      body: json({ ...job, cron: "* * * * *", timezone }),
      headers: JSON_TYPE,
      status: [400],
      message: /timezone|time zone/i,
    });
    add({
      name: `cron preview: time zone ${JSON.stringify(timezone)}`,
      method: "GET",
      path: `/v1/cron-preview?${new URLSearchParams({ cron: "* * * * *", timezone })}`,
      status: [400],
      message: /timezone|time zone/i,
    });
  }
  for (const every of ["0s", "-5m", "forever", "10", "0", "1 hour", "P1D"]) {
    add({
      name: `cron add: every ${JSON.stringify(every)}`,
      method: "POST",
      path: "/v1/cron-jobs",
      body: json({ ...job, every }),
      headers: JSON_TYPE,
      status: [400],
      message: /every|interval|duration/i,
    });
  }
  for (const delay of [
    "1e400",
    "-1e400",
    "-0.5",
    String(maxDelaySeconds + 0.001),
    "1e308",
    '"NaN"',
    '"Infinity"',
    '"-1"',
    "[]",
    "{}",
    "true",
  ]) {
    add({
      name: `notify: delaySeconds ${delay}`,
      method: "POST",
      path: "/v1/notify",
      body: Buffer.from(`{"sessionId":${JSON.stringify(ids.session)},"message":"m","delaySeconds":${delay}}`),
      headers: JSON_TYPE,
      status: [400],
      message: /delaySeconds/,
    });
  }
  add({
    name: "notify: a body nested 500 000 deep",
    method: "POST",
    path: "/v1/notify",
    body: Buffer.from("[".repeat(500_000) + "]".repeat(500_000)),
    headers: JSON_TYPE,
    status: [400],
    message: /expected object/,
  });
  add({
    name: "notify: NUL in a key",
    method: "POST",
    path: "/v1/notify",
    body: Buffer.from(`{"sessionId":${JSON.stringify(ids.session)},"message":"m","delaySeconds":1,"a\\u0000b":1}`),
    headers: JSON_TYPE,
    status: [400],
    message: /NUL character/,
  });
  add({
    name: "agents: NUL in an env name",
    method: "PUT",
    path: `/v1/agents/${ids.apiAgent}`,
    body: json({ executor: "command", argv: ["x"], env: { "A\u0000": "b" } }),
    headers: JSON_TYPE,
    status: [400],
    message: /env.*NUL character/,
  });
  add({
    name: "notify: unknown session",
    method: "POST",
    path: "/v1/notify",
    body: json({ sessionId: "no-such-session", message: "m", delaySeconds: 5 }),
    headers: JSON_TYPE,
    status: [404],
    message: /no session with id "no-such-session"/,
  });
  add({
    name: "sessions: duplicate id",
    method: "POST",
    path: "/v1/sessions",
    body: json({ id: ids.session, agentId: "a1" }),
    headers: JSON_TYPE,
    status: [409],
    message: /already exists/,
  });
  add({
    name: "pause: blank note",
    method: "POST",
    path: `/v1/cron-jobs/${ids.cronJob}/pause`,
    body: json({ note: "   " }),
    headers: JSON_TYPE,
    status: [400],
    message: /note/,
  });
  add({
    name: "agents: webhook with an ftp URL",
    method: "PUT",
    path: `/v1/agents/${ids.apiAgent}`,
    body: json({ executor: "webhook", url: "ftp://example.com/x" }),
    headers: JSON_TYPE,
    status: [400],
    message: /url/,
  });
  add({
    name: "agents: command timeout that is not a duration",
    method: "PUT",
    path: `/v1/agents/${ids.apiAgent}`,
    body: json({ executor: "command", argv: ["x"], timeout: "soon" }),
    headers: JSON_TYPE,
    status: [400],
    message: /not a duration/,
  });
  return cases;
}
