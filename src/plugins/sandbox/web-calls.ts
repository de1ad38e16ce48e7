import { createHash } from "node:crypto";
import type { Pending } from "../isolate-types.ts";

const DIGESTS: Readonly<Record<string, string>> = {
  "SHA-1": "sha1",
  "SHA-256": "sha256",
  "SHA-384": "sha384",
  "SHA-512": "sha512",
};

/**
 * The two web globals that cross (sandbox/web-globals.ts), granted to every plugin since they reach
 * nothing: `setTimeout`'s wait, a timer of the daemon's that only answers (dropped when the
 * handler ends, so never past its deadline), and `crypto.subtle.digest`, a hash of at most the
 * budget's arguments. Both were admitted as calls in flight by the isolate and by Crossings.
 */
export function webCall(method: "timer" | "digest", args: unknown[], call: Pending | undefined): Promise<unknown> {
  if (method === "digest") {
    const [name, data] = args;
    const algorithm = typeof name === "string" ? DIGESTS[name] : undefined;
    if (!algorithm || typeof data !== "string") return Promise.reject(new Error("malformed digest call"));
    return Promise.resolve(JSON.stringify(createHash(algorithm).update(Buffer.from(data, "base64")).digest("base64")));
  }
  const ms = args[0];
  if (typeof ms !== "number" || !(ms >= 0)) return Promise.reject(new Error("malformed timer call"));
  if (!call) return Promise.reject(new Error("setTimeout works only while a handler runs"));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      call.timers?.delete(timer);
      resolve(undefined);
    }, ms);
    (call.timers ??= new Set()).add(timer);
  });
}
