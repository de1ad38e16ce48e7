/** Cases that get the path wrong: methods a path lacks, unknown and malformed ids, agents and hooks that cannot be named. */
import type { ApiRoute } from "../../../src/api/route.ts";
import type { RuntimeHook } from "../../../src/plugins/contexts.ts";
import { fill, idKind, json, JSON_TYPE, key, type FuzzContext } from "./shared.ts";

/** Methods a path does not have, and paths that do not exist. */
export function methodCases(ctx: FuzzContext): void {
  const { routes, add, goodParams } = ctx;
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
}

/** Ids: unknown, malformed, beyond int8, with NUL characters. */
export function idCases(ctx: FuzzContext, route: ApiRoute): void {
  const { add, bodies } = ctx;
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
    for (const id of ["no-such-session", "%00", "a%00b", "%F0%9F%92%A5", "x".repeat(201), "..%2F..%2Fetc", "%C3%28"]) {
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
}

/** The config file's agent, and agent ids that are not ids. */
export function agentCases(ctx: FuzzContext, route: ApiRoute): void {
  const { add, ids } = ctx;
  if (route.url !== "/v1/agents/:id") return;
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

/** Tokens that are not approval links: unsigned, forged, malformed, with NUL characters. */
export function linkCases(ctx: FuzzContext, route: ApiRoute): void {
  if (route.url !== "/v1/approvals/:token") return;
  for (const token of ["nope", "1.approve.99999999999.AAAA", "1.approve.x.y", "%00", "1.reject.1.%00", "x".repeat(300)])
    ctx.add({
      name: `${key(route)}: token ${token.slice(0, 20)}`,
      method: route.method,
      path: fill(route, { token }),
      status: [404],
      message: /no approval link/,
    });
}

/** Hooks that do not exist, that the daemon alone fires, and each hook's context sent to another. */
export function hookCases(ctx: FuzzContext, route: ApiRoute): void {
  const { add, hooks, refused } = ctx;
  if (route.url !== "/v1/hooks/:hook") return;
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
