/**
 * The web platform's common globals a plugin may expect (the WinterTC minimum common API, as far as
 * it grants nothing), written in plain JavaScript and run inside each isolate by the bootstrap:
 * nothing here holds a reference to the daemon. `setTimeout` and `crypto.subtle.digest` are the
 * two that cross, through the bootstrap's budgeted call (`timer`, `digest`): each is a call in
 * flight like any host call, and a timer never outlives the handler that set it (the daemon drops
 * its timers when the invocation ends). `crypto.getRandomValues` is a ChaCha20 keystream keyed by
 * 32 random bytes the daemon sends with each invocation.
 *
 * A function of (g, hooks) where hooks = { admit, send, seed, describe, fire } from the bootstrap.
 */
export const WEB_GLOBALS = String.raw`(g, hooks) => {
  "use strict";
  const define = (name, value) => Object.defineProperty(g, name, { value, writable: true, configurable: true });
  const then = Promise.prototype.then;
  const resolved = Promise.resolve();
  const apply = Reflect.apply;
  const fromCharCode = String.fromCharCode;
  const reportError = (err) => hooks.fire("console", "error", () => "uncaught in a callback: " + hooks.describe(err));

  define("queueMicrotask", (callback) => {
    if (typeof callback !== "function") throw new TypeError("queueMicrotask: the callback must be a function");
    apply(then, resolved, [() => { try { callback(); } catch (err) { reportError(err); } }]);
  });

  // Timers: the wait happens in the daemon (a timer of its own, cleared when the handler ends).
  let nextTimer = 1;
  const live = new Set();
  define("setTimeout", (callback, delay, ...args) => {
    const ms = Math.max(0, Math.min(2147483647, Number(delay) || 0));
    const json = hooks.admit([ms]);
    const id = nextTimer++;
    live.add(id);
    apply(then, hooks.send("timer", json), [
      () => {
        if (!live.delete(id)) return;
        try { if (typeof callback === "function") apply(callback, undefined, args); } catch (err) { reportError(err); }
      },
      () => { live.delete(id); },
    ]);
    return id;
  });
  define("clearTimeout", (id) => { live.delete(id); });

  const origin = Date.now();
  let last = 0;
  define("performance", Object.freeze({
    timeOrigin: origin,
    // Monotonic within the isolate, in ms (the clock's resolution: no finer timer to time side channels with).
    now: () => { const t = Date.now() - origin; if (t > last) last = t; return last; },
  }));

  // --- base64 -----------------------------------------------------------------------------
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const B64_INDEX = new Map([...B64].map((c, i) => [c, i]));
  const invalidCharacter = (message) => { const e = new Error(message); e.name = "InvalidCharacterError"; return e; };
  const bytesToBase64 = (bytes) => {
    let out = "";
    for (let i = 0; i < bytes.length; i += 3) {
      const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
      out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63] + (i + 1 < bytes.length ? B64[(n >> 6) & 63] : "=") + (i + 2 < bytes.length ? B64[n & 63] : "=");
    }
    return out;
  };
  const base64ToBytes = (text) => {
    let s = String(text).replace(/[\t\n\f\r ]/g, "");
    if (s.length % 4 === 0) s = s.replace(/==?$/, "");
    if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) throw invalidCharacter("atob: not valid base64");
    const out = new Uint8Array(Math.floor((s.length * 3) / 4));
    let bits = 0, value = 0, j = 0;
    for (const c of s) {
      value = (value << 6) | B64_INDEX.get(c);
      bits += 6;
      if (bits >= 8) { bits -= 8; out[j++] = (value >> bits) & 255; }
    }
    return out;
  };
  define("btoa", (data) => {
    const s = String(data);
    const bytes = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) {
      const code = s.charCodeAt(i);
      if (code > 255) throw invalidCharacter("btoa: the string has characters outside Latin-1");
      bytes[i] = code;
    }
    return bytesToBase64(bytes);
  });
  define("atob", (data) => {
    const bytes = base64ToBytes(data);
    let out = "";
    for (let i = 0; i < bytes.length; i += 4096) out += apply(fromCharCode, undefined, bytes.subarray(i, i + 4096));
    return out;
  });

  // --- TextEncoder / TextDecoder (UTF-8) --------------------------------------------------
  const encodeUtf8 = (input) => {
    const s = String(input);
    const out = [];
    for (let i = 0; i < s.length; i++) {
      let c = s.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) { c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00); i++; }
        else c = 0xfffd;
      } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
      if (c < 0x80) out.push(c);
      else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
      else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
    return new Uint8Array(out);
  };
  class TextEncoder {
    get encoding() { return "utf-8"; }
    encode(input = "") { return encodeUtf8(input); }
    encodeInto(input, dest) {
      const s = String(input);
      let read = 0, written = 0;
      for (const ch of s) {
        const bytes = encodeUtf8(ch);
        if (written + bytes.length > dest.length) break;
        dest.set(bytes, written);
        written += bytes.length;
        read += ch.length;
      }
      return { read, written };
    }
  }
  const asBytes = (input) => {
    if (input === undefined) return new Uint8Array(0);
    if (input instanceof ArrayBuffer) return new Uint8Array(input);
    if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    throw new TypeError("expected an ArrayBuffer or a view of one");
  };
  class TextDecoder {
    #fatal; #ignoreBOM;
    constructor(label = "utf-8", options = {}) {
      if (!["utf-8", "utf8", "unicode-1-1-utf-8"].includes(String(label).trim().toLowerCase()))
        throw new RangeError('TextDecoder: only "utf-8" is supported here, not "' + label + '"');
      this.#fatal = Boolean(options.fatal);
      this.#ignoreBOM = Boolean(options.ignoreBOM);
    }
    get encoding() { return "utf-8"; }
    get fatal() { return this.#fatal; }
    get ignoreBOM() { return this.#ignoreBOM; }
    decode(input) {
      const b = asBytes(input);
      let i = !this.#ignoreBOM && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0;
      const units = [];
      let out = "";
      const bad = () => {
        if (this.#fatal) throw new TypeError("TextDecoder: the data is not valid UTF-8");
        units.push(0xfffd);
      };
      while (i < b.length) {
        const c = b[i];
        let need = 0, cp = 0, min = 0;
        if (c < 0x80) { units.push(c); i++; }
        else {
          if (c >= 0xc2 && c <= 0xdf) { need = 1; cp = c & 31; min = 0x80; }
          else if (c >= 0xe0 && c <= 0xef) { need = 2; cp = c & 15; min = 0x800; }
          else if (c >= 0xf0 && c <= 0xf4) { need = 3; cp = c & 7; min = 0x10000; }
          else { bad(); i++; continue; }
          let j = 1;
          for (; j <= need; j++) {
            const n = b[i + j];
            if (n === undefined || (n & 0xc0) !== 0x80) break;
            cp = (cp << 6) | (n & 63);
          }
          if (j <= need || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) { bad(); i += Math.max(1, j); continue; }
          i += need + 1;
          if (cp >= 0x10000) { cp -= 0x10000; units.push(0xd800 + (cp >> 10), 0xdc00 + (cp & 1023)); }
          else units.push(cp);
        }
        if (units.length >= 4096) { out += apply(fromCharCode, undefined, units); units.length = 0; }
      }
      return out + apply(fromCharCode, undefined, units);
    }
  }
  define("TextEncoder", TextEncoder);
  define("TextDecoder", TextDecoder);

  // --- crypto -----------------------------------------------------------------------------
  // ChaCha20 (RFC 8439) as a generator: the key is rekeyed from the daemon's bytes each invocation.
  const key = new Uint32Array(8);
  let counter = 0;
  const pool = new Uint8Array(64);
  let poolLeft = 0;
  const rekey = (base64) => {
    const bytes = base64ToBytes(base64);
    for (let i = 0; i < 8; i++) key[i] ^= bytes[4 * i] | (bytes[4 * i + 1] << 8) | (bytes[4 * i + 2] << 16) | (bytes[4 * i + 3] << 24);
    counter = 0;
    poolLeft = 0;
  };
  const rotl = (v, n) => (v << n) | (v >>> (32 - n));
  const block = () => {
    const s = new Uint32Array([0x61707865, 0x3320646e, 0x79622d32, 0x6b206574, ...key, counter++, 0, 0, 0]);
    const x = new Uint32Array(s);
    const qr = (a, b, c, d) => {
      x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 16);
      x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 12);
      x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 8);
      x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 7);
    };
    for (let i = 0; i < 10; i++) {
      qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15);
      qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14);
    }
    for (let i = 0; i < 16; i++) {
      const v = (x[i] + s[i]) >>> 0;
      pool[4 * i] = v; pool[4 * i + 1] = v >>> 8; pool[4 * i + 2] = v >>> 16; pool[4 * i + 3] = v >>> 24;
    }
    poolLeft = 64;
  };
  rekey(hooks.seed);
  const INTEGER_ARRAYS = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array];
  const getRandomValues = (array) => {
    if (!INTEGER_ARRAYS.some((T) => array instanceof T)) {
      const e = new TypeError("getRandomValues: an integer typed array is needed"); e.name = "TypeMismatchError"; throw e;
    }
    if (array.byteLength > 65536) {
      const e = new RangeError("getRandomValues: at most 65536 bytes at a time"); e.name = "QuotaExceededError"; throw e;
    }
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    for (let i = 0; i < bytes.length; i++) {
      if (poolLeft === 0) block();
      bytes[i] = pool[64 - poolLeft--];
    }
    return array;
  };
  const randomUUID = () => {
    const b = getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const hex = [...b].map((v) => v.toString(16).padStart(2, "0")).join("");
    return hex.slice(0, 8) + "-" + hex.slice(8, 12) + "-" + hex.slice(12, 16) + "-" + hex.slice(16, 20) + "-" + hex.slice(20);
  };
  const DIGESTS = new Set(["SHA-1", "SHA-256", "SHA-384", "SHA-512"]);
  const digest = async (algorithm, data) => {
    const name = String(typeof algorithm === "object" && algorithm !== null ? algorithm.name : algorithm).toUpperCase();
    if (!DIGESTS.has(name)) {
      const e = new Error("digest: " + name + " is not supported (SHA-1, SHA-256, SHA-384, SHA-512)"); e.name = "NotSupportedError"; throw e;
    }
    const out = await hooks.send("digest", hooks.admit([name, bytesToBase64(asBytes(data))]));
    const bytes = base64ToBytes(out);
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  };
  define("crypto", Object.freeze({ getRandomValues, randomUUID, subtle: Object.freeze({ digest }) }));

  // --- AbortController / AbortSignal ------------------------------------------------------
  const abortError = (reason) => { const e = new Error(reason === undefined ? "This operation was aborted" : String(reason)); e.name = "AbortError"; return e; };
  class AbortSignal {
    #aborted = false; #reason = undefined; #listeners = [];
    onabort = null;
    get aborted() { return this.#aborted; }
    get reason() { return this.#reason; }
    throwIfAborted() { if (this.#aborted) throw this.#reason; }
    addEventListener(type, listener, options) {
      if (type !== "abort" || typeof listener !== "function") return;
      this.#listeners.push({ listener, once: Boolean(options && options.once) });
    }
    removeEventListener(type, listener) { this.#listeners = this.#listeners.filter((l) => l.listener !== listener); }
    static abort(reason) { const c = new AbortController(); c.abort(reason); return c.signal; }
    static timeout(ms) { const c = new AbortController(); g.setTimeout(() => c.abort(Object.assign(new Error("The operation timed out"), { name: "TimeoutError" })), ms); return c.signal; }
    static _abort(signal, reason) {
      if (signal.#aborted) return;
      signal.#aborted = true;
      signal.#reason = reason === undefined ? abortError() : reason;
      const event = { type: "abort", target: signal };
      const listeners = signal.#listeners;
      signal.#listeners = listeners.filter((l) => !l.once);
      for (const l of [...(typeof signal.onabort === "function" ? [{ listener: signal.onabort }] : []), ...listeners]) {
        try { apply(l.listener, signal, [event]); } catch (err) { reportError(err); }
      }
    }
  }
  const abortSignal = AbortSignal._abort;
  delete AbortSignal._abort;
  class AbortController {
    #signal = new AbortSignal();
    get signal() { return this.#signal; }
    abort(reason) { abortSignal(this.#signal, reason); }
  }
  define("AbortSignal", AbortSignal);
  define("AbortController", AbortController);

  // --- structuredClone --------------------------------------------------------------------
  const dataCloneError = (what) => { const e = new Error(what + " could not be cloned"); e.name = "DataCloneError"; return e; };
  const TYPED = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array];
  const ERRORS = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
  const clone = (value, seen) => {
    if (typeof value === "function") throw dataCloneError("a function");
    if (typeof value === "symbol") throw dataCloneError("a symbol");
    if (value === null || typeof value !== "object") return value;
    if (seen.has(value)) return seen.get(value);
    const set = (copy) => { seen.set(value, copy); return copy; };
    const tag = Object.prototype.toString.call(value);
    if (value instanceof Date) return set(new Date(value.getTime()));
    if (value instanceof RegExp) return set(new RegExp(value.source, value.flags));
    if (value instanceof ArrayBuffer) return set(value.slice(0));
    if (ArrayBuffer.isView(value)) {
      const buffer = clone(value.buffer, seen);
      if (value instanceof DataView) return set(new DataView(buffer, value.byteOffset, value.byteLength));
      const T = TYPED.find((t) => value instanceof t);
      return set(new T(buffer, value.byteOffset, value.length));
    }
    if (value instanceof Map) { const m = set(new Map()); for (const [k, v] of value) m.set(clone(k, seen), clone(v, seen)); return m; }
    if (value instanceof Set) { const s = set(new Set()); for (const v of value) s.add(clone(v, seen)); return s; }
    if (value instanceof Error) {
      const E = ERRORS[value.name] ?? Error;
      const e = set(new E(value.message));
      if (typeof value.stack === "string") e.stack = value.stack;
      if ("cause" in value) e.cause = clone(value.cause, seen);
      return e;
    }
    if (tag === "[object Boolean]" || tag === "[object Number]" || tag === "[object String]" || tag === "[object BigInt]")
      return set(Object(value.valueOf()));
    if (tag !== "[object Object]" && tag !== "[object Array]") throw dataCloneError(tag.slice(8, -1));
    const copy = set(Array.isArray(value) ? new Array(value.length) : {});
    for (const k of Object.keys(value)) copy[k] = clone(value[k], seen);
    return copy;
  };
  define("structuredClone", (value, options) => {
    if (options && options.transfer && options.transfer.length) throw dataCloneError("a transfer list");
    return clone(value, new Map());
  });

  return { rekey };
}`;
