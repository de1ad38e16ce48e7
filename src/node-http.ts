import { createRequire } from "node:module";
import type * as Http from "node:http";
import type * as Https from "node:https";

/**
 * node:http and node:https, loaded as CommonJS. An ESM import of a built-in module builds its ESM
 * namespace, which reads every export, and on Node 24 node:http's `WebSocket`, `CloseEvent` and
 * `MessageEvent` exports are getters that load undici and node:http2: about 100 ms of CPU in a
 * `serve` start on two cores, for classes missiond never uses. `require` reads only what is used.
 */
const requireBuiltin = createRequire(import.meta.url);
export const http = requireBuiltin("node:http") as typeof Http;

/**
 * node:https (and the TLS it brings) only once an https URL is called: an idle daemon calls none,
 * and loading it costs about 1 MB resident (bench/memory.ts, see build.ts).
 */
let loadedHttps: typeof Https | undefined;
export const https = new Proxy({} as typeof Https, {
  get: (_, key) => (loadedHttps ??= requireBuiltin("node:https") as typeof Https)[key as keyof typeof Https],
});
