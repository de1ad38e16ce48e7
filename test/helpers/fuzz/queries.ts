/** Cases that get the query string or the hop header wrong, with everything else right. */
import type { z } from "zod";
import type { ApiRoute } from "../../../src/api/route.ts";
import { mutations } from "../api-examples.ts";
import { esc, json, JSON_TYPE, key, type FuzzContext } from "./shared.ts";

/** Unknown, repeated, overlong and invalid query parameters. */
export function queryCases(ctx: FuzzContext, route: ApiRoute, url: string): void {
  const { add, queries } = ctx;
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
}

/** Hop headers that are not a whole number of hops, with an otherwise valid request. */
export function hopCases(ctx: FuzzContext, route: ApiRoute, url: string): void {
  const { add, hooks, bodies } = ctx;
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
