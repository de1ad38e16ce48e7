/** Cases that get the body wrong: broken or oversized JSON, wrong content types, invalid values, seeded garbage. */
import type { ApiRoute } from "../../../src/api/route.ts";
import { mutations } from "../api-examples.ts";
import { esc, fill, json, JSON_TYPE, key, setAt, stringPaths, randomJson, type FuzzContext } from "./shared.ts";

/** Every body case of the route at `url` (with good path parameters). */
export function bodyCases(ctx: FuzzContext, route: ApiRoute, url: string): void {
  if (!route.body) return bodylessCases(ctx, route, url);
  brokenBodies(ctx, route, url);
  oversizedBodies(ctx, route, url);
  mutatedBodies(ctx, route);
  exampleInvalidBodies(ctx, route, url);
  randomBodies(ctx, route, url);
}

/** Methods without a body still parse a JSON body when it is sent: a broken one is refused. */
function bodylessCases(ctx: FuzzContext, route: ApiRoute, url: string): void {
  const { add } = ctx;
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
}

/** JSON that does not parse, no body, the wrong content type, and JSON that is not an object. */
function brokenBodies(ctx: FuzzContext, route: ApiRoute, url: string): void {
  const { add, bodies } = ctx;
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
      message: /must be an object, not/,
    });
  }
}

/** Bodies over the limit, and shapes the parser must refuse: prototype keys, deep nesting. */
function oversizedBodies(ctx: FuzzContext, route: ApiRoute, url: string): void {
  const { add, bodies, bodyLimit } = ctx;
  const valid = json(bodies[key(route)]!.valid[0]);
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
    message: /must be an object, not/,
  });
}

/** Each valid example mutated into an invalid one, with NUL characters, and with a duplicate key. */
function mutatedBodies(ctx: FuzzContext, route: ApiRoute): void {
  const { add, bodies, goodParams, refused, hookOf } = ctx;
  const examples = bodies[key(route)]!;
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
}

/** The examples' own invalid values (each checked to be invalid by the daemon's schema). */
function exampleInvalidBodies(ctx: FuzzContext, route: ApiRoute, url: string): void {
  const { add, bodies, refused } = ctx;
  const examples = bodies[key(route)]!;
  for (const value of [...(examples.invalid ?? []), ...(examples.refinementOnly ?? [])]) {
    const hook = route.url === "/v1/hooks/:hook" ? "systemPrompt" : undefined;
    if (value === null && route.bodyOptional) continue;
    if (!refused(route, value, hook)) throw new Error(`fuzz: ${key(route)} example ${JSON.stringify(value)} is valid`);
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
}

/** Seeded garbage: random JSON the schema refuses, and random bytes. */
function randomBodies(ctx: FuzzContext, route: ApiRoute, url: string): void {
  const { add, rand, refused } = ctx;
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
