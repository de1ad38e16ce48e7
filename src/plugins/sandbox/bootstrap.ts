import { DIALECTS, LIST_REGISTRATIONS } from "./dialects.ts";
import { URL_GLOBALS } from "./url-globals.ts";
import { WEB_GLOBALS } from "./web-globals.ts";

/**
 * The source run first in each plugin's isolate, before the plugin's own modules. The isolate
 * has only ECMAScript built-ins; this adds what the contract promises (`middleware`, `host`,
 * `tools`, `console`) and nothing else. Everything `host` does is a call into the daemon through
 * one reference held in a closure; the daemon checks the plugin's grants on every such call, so
 * whatever plugin code does to this file's objects, it cannot reach more than its manifest grants.
 *
 * Only strings cross the boundary: contexts and results travel as JSON, and the veto and defer
 * tokens are built here, in the plugin's own realm.
 */
export const BOOTSTRAP = String.raw`
(() => {
  "use strict";
  const LIST = ${JSON.stringify(LIST_REGISTRATIONS)};
  const makeDialects = ${DIALECTS};
  const g = globalThis;
  const rpc = g.__rpc;
  const setup = JSON.parse(g.__setup);
  delete g.__rpc;
  delete g.__setup;
  // Shared memory could block a thread with Atomics.wait; WebAssembly memory lives outside the
  // heap limit. No plugin needs either.
  for (const name of ["SharedArrayBuffer", "Atomics", "WebAssembly"]) delete g[name];
  const jsonParse = JSON.parse;
  // What the daemon sends (contexts, call metadata, host answers) is parsed from a two-byte string:
  // V8's JSON.parse interns every one-byte string value shorter than 10 characters, in old space and
  // the isolate's string table, until a full collection, which an isolate this small runs rarely.
  // Run and job ids are such values, a new one each call: at 100 runs a second they held up to 6 MB
  // outside the isolate's heap and doubled the heap between collections. Keys are interned all the
  // same (a fixed set).
  const parse = (json) => jsonParse("[" + json + ',"\u0100"]')[0];
  const stringify = JSON.stringify;
  const freeze = Object.freeze;
  const keys = Object.keys;

  let current = { token: 0, sessionId: null, hop: 0, agentId: null, ssh: false };
  // Everything below that plugin code could replace later (prototype methods, Date.now) is
  // captured now: the budgets hold whatever the plugin does to its own realm.
  const budget = setup.budget;
  const applyRef = rpc.apply.bind(rpc);
  const applyIgnored = rpc.applyIgnored.bind(rpc);
  const clock = Date.now;
  const then = Promise.prototype.then;
  const resolved = Promise.resolve();
  const apply = Reflect.apply;
  const slice = String.prototype.slice;
  // An escape, not the character: one non-ASCII character and V8 holds the daemon's whole bundled
  // source at two bytes a character.
  const clip = (text, max) =>
    text.length <= max ? text : apply(slice, text, [0, max]) + "\u2026 (" + (text.length - max) + " more characters)";
  const win = { start: 0, lines: 0, chars: 0, flushes: 0, calls: 0, callChars: 0 };
  const roll = () => {
    const t = clock();
    if (t - win.start < budget.windowMs) return;
    win.start = t; win.lines = 0; win.chars = 0; win.flushes = 0; win.calls = 0; win.callChars = 0;
  };
  // Log lines go out in batches: one crossing per batch, a bounded number of batches and lines
  // per window; what is over the budget is counted and reported once with the next batch.
  let batch = [];
  let dropped = 0;
  let queued = false;
  const flush = () => {
    queued = false;
    if (batch.length === 0 && dropped === 0) return;
    roll();
    if (win.flushes >= budget.logFlushes) return;
    win.flushes++;
    const lines = batch;
    const lost = dropped;
    batch = [];
    dropped = 0;
    applyIgnored(undefined, ["logs", stringify({ lines, dropped: lost }), 0]);
  };
  const fire = (method, level, text) => {
    roll();
    if (win.lines >= budget.logLines) { dropped++; return; }
    const line = clip(String(typeof text === "function" ? text() : text), budget.lineChars);
    if (win.chars + line.length > budget.logChars) { dropped++; return; }
    win.lines++;
    win.chars += line.length;
    batch[batch.length] = [method, String(level), line];
    if (!queued) { queued = true; apply(then, resolved, [flush]); }
  };
  // ICU objects hold their memory outside the heap, where the isolate's limit does not see it:
  // their constructors count the live ones (a finalizer counts them down) and refuse past the budget.
  const intl = { live: 0 };
  const finalizer = new FinalizationRegistry(() => { intl.live--; });
  const room = () => {
    if (intl.live >= budget.intlObjects)
      throw new RangeError("more than " + budget.intlObjects + " live Intl objects in this plugin (its budget)");
  };
  const counted = (object) => {
    intl.live++;
    finalizer.register(object, 0);
    return object;
  };
  const construct = Reflect.construct;
  const Segmenter = Intl.Segmenter;
  for (const name of ["Collator", "DateTimeFormat", "DisplayNames", "DurationFormat", "ListFormat", "Locale",
    "NumberFormat", "PluralRules", "RelativeTimeFormat", "Segmenter"]) {
    const Original = Intl[name];
    if (typeof Original !== "function") continue;
    function Counted(...args) {
      room();
      return counted(construct(Original, args, new.target && new.target !== Counted ? new.target : Original));
    }
    Counted.prototype = Original.prototype;
    Object.defineProperty(Original.prototype, "constructor", { value: Counted, writable: true, configurable: true });
    if (typeof Original.supportedLocalesOf === "function") Counted.supportedLocalesOf = Original.supportedLocalesOf;
    Object.defineProperty(Intl, name, { value: Counted, writable: true, configurable: true });
  }
  // A segmenter's segments and their iterators each hold a break iterator of their own.
  if (typeof Segmenter === "function") {
    const segment = Segmenter.prototype.segment;
    const segments = Object.getPrototypeOf(apply(segment, new Segmenter(), [""]));
    const iterate = segments[Symbol.iterator];
    const wrap = (original) => function (...args) {
      room();
      return counted(apply(original, this, args));
    };
    Object.defineProperty(Segmenter.prototype, "segment", { value: wrap(segment), writable: true, configurable: true });
    Object.defineProperty(segments, Symbol.iterator, { value: wrap(iterate), writable: true, configurable: true });
  }
  let inFlight = 0;
  // One error per reason, made once: a loop of refused calls costs the isolate no stack traces.
  const refusals = new Map();
  const refuse = (why) => {
    let err = refusals.get(why);
    if (!err) refusals.set(why, (err = new Error("host call refused: " + why + " (the plugin's budget)")));
    return err;
  };
  // A call is admitted (counted against the budgets, or refused) before anything crosses; the
  // timers and digests of the web globals are admitted the same way.
  const admit = (args) => {
    roll();
    if (inFlight >= budget.inFlight) throw refuse(budget.inFlight + " calls already in flight");
    if (win.calls >= budget.calls) throw refuse("more than " + budget.calls + " calls in " + budget.windowMs + " ms");
    const json = stringify(args);
    if (json.length > budget.callChars) throw refuse("arguments longer than " + budget.callChars + " characters");
    if (win.callChars + json.length > budget.callCharsPerWindow)
      throw refuse("more than " + budget.callCharsPerWindow + " characters of arguments in " + budget.windowMs + " ms");
    win.calls++;
    win.callChars += json.length;
    return json;
  };
  const call = async (method, ...args) => send(method, admit(args));
  const send = async (method, json) => {
    inFlight++;
    try {
      const out = await applyRef(undefined, [method, json, current.token], { result: { promise: true } });
      return out === undefined ? undefined : parse(out);
    } finally {
      inFlight--;
    }
  };
  const describe = (value) => {
    try {
      if (typeof value === "string") return value;
      if (value instanceof Error) return value.stack || String(value);
      return stringify(value) ?? String(value);
    } catch {
      try { return String(value); } catch { return "(a value that cannot be shown)"; }
    }
  };
  const deepFreeze = (value) => {
    if (value && typeof value === "object") { for (const inner of Object.values(value)) deepFreeze(inner); freeze(value); }
    return value;
  };

  const granted = new Set(setup.members);
  const host = { config: deepFreeze(setup.config) };
  if (granted.has("log")) host.log = (level, message) => fire("log", String(level), String(message));
  if (granted.has("clock")) host.clock = freeze({ now: () => Date.now() });
  if (granted.has("store")) {
    host.store = freeze({
      get: (key) => call("store.get", key),
      set: (key, value) => call("store.set", key, value),
      delete: (key) => call("store.delete", key),
      list: (prefix) => call("store.list", prefix ?? ""),
    });
  }
  if (granted.has("fetch")) {
    host.fetch = async (url, init) => {
      const res = await call("fetch", String(url), init ?? {});
      const ok = res.status >= 200 && res.status < 300;
      return freeze({ status: res.status, ok, url: res.url, headers: freeze(res.headers),
        text: async () => res.body, json: async () => jsonParse(res.body) });
    };
  }
  if (granted.has("agents")) host.agents = freeze({ list: () => call("agents.list") });
  if (granted.has("fs")) {
    host.fs = freeze({
      read: (path) => call("fs.read", String(path)),
      write: (path, text) => call("fs.write", String(path), String(text)),
      list: (path) => call("fs.list", String(path)),
    });
  }
  if (granted.has("env")) host.env = deepFreeze(setup.env);
  if (granted.has("llm")) {
    host.llm = freeze({ complete: (request) => call("llm.complete", request ?? {}) });
    host.decide = (request) => call("llm.decide", request ?? {});
  }
  if (granted.has("session")) {
    // The session the running handler was invoked for; withheld past the hop limit.
    Object.defineProperty(host, "session", {
      enumerable: true,
      get() {
        const { sessionId, hop } = current;
        if (!sessionId || hop > setup.maxHops) return undefined;
        return freeze({
          id: sessionId,
          info: () => call("session.info"),
          conversation: freeze({ read: (options) => call("session.read", options ?? {}) }),
          peer: freeze({ send: (targetSessionId, text) => call("session.peer.send", String(targetSessionId), String(text)) }),
        });
      },
    });
  }
  if (granted.has("workspace")) {
    // The workspace of the agent the running handler was invoked for; absent on hooks without one.
    const workspace = freeze({
      read: (path) => call("workspace.read", String(path)),
      write: (path, text) => call("workspace.write", String(path), String(text)),
      list: (path) => call("workspace.list", path === undefined ? "" : String(path)),
      stat: (path) => call("workspace.stat", String(path)),
    });
    Object.defineProperty(host, "workspace", { enumerable: true, get: () => (current.agentId ? workspace : undefined) });
  }
  if (granted.has("ssh")) {
    // The server the running SSH hook fired for; absent on every other hook.
    const ssh = freeze({ command: (command, options) => call("ssh.command", String(command), options ?? {}) });
    Object.defineProperty(host, "ssh", { enumerable: true, get: () => (current.ssh ? ssh : undefined) });
  }
  // A member the manifest does not grant fails with what to add, not "Cannot read properties of
  // undefined". Not enumerable, so the host object reads as it did; a member the plugin's code
  // tests for presence (setup.ungranted leaves it out) stays absent.
  const Err = Error;
  for (const [member, text, callable] of setup.ungranted) {
    const fail = () => { throw new Err(text); };
    const stub = new Proxy(callable ? function () {} : {}, { get: fail, apply: fail, construct: fail, set: fail });
    Object.defineProperty(host, member, { value: stub, enumerable: false });
  }
  g.host = freeze(host);
  const web = (${WEB_GLOBALS})(g, { admit, send, seed: setup.seed, describe, fire });
  (${URL_GLOBALS})(g);
  g.middleware = {};
  // The line is only built when the budget has room for it.
  const out = (level) => (...args) => fire("console", level, () => args.map(describe).join(" "));
  g.console = freeze({ log: out("info"), info: out("info"), debug: out("debug"), trace: out("debug"),
    warn: out("warn"), error: out("error") });

  class Cancellation { constructor(reason) { this.reason = reason; } }
  class Deferral {
    constructor(until, reason) { this.until = until instanceof Date ? until.toISOString() : until; this.reason = reason; }
  }
  class ApprovalRequest { constructor(reason) { this.reason = reason; } }
  const tools = freeze({
    cancel: (reason) => new Cancellation(reason === undefined ? "" : String(reason)),
    defer: (options) => new Deferral(options?.until, options?.reason === undefined ? "" : String(options.reason)),
    requireApproval: (options) => new ApprovalRequest(options?.reason === undefined ? "" : String(options.reason)),
  });
  const message = (err) => {
    try {
      return clip(err instanceof Error ? String(err.message) : String(err), budget.messageChars);
    } catch {
      return "(an error that cannot be shown)";
    }
  };

  const tooLong = () =>
    stringify({ outcome: "malformed", message: "returned more than " + setup.maxResultChars + " characters" });
  const settle = (value) => {
    if (value instanceof Cancellation)
      return stringify({ outcome: "cancel", reason: clip(String(value.reason), budget.messageChars) });
    if (value instanceof Deferral)
      return stringify({ outcome: "defer", until: value.until, reason: clip(String(value.reason), budget.messageChars) });
    if (value instanceof ApprovalRequest)
      return stringify({ outcome: "approval", reason: clip(String(value.reason), budget.messageChars) });
    // An over-long string is refused before it is serialized: copying megabytes only to drop them
    // could itself outlast the handler's timeout on a loaded machine.
    if (typeof value === "string" && value.length > setup.maxResultChars) return tooLong();
    const json = stringify(value);
    const size = typeof value === "string" ? value.length : (json?.length ?? 0);
    if (size > setup.maxResultChars) return tooLong();
    return json === undefined ? '{"outcome":"value"}' : '{"outcome":"value","value":' + json + "}";
  };
  const dialect = makeDialects(g, setup, freeze, fire, describe, stringify);
  g.__adopt = dialect.adopt;
  // What the handler logged leaves with its answer (a line logged later, in a continuation, with
  // the next batch or the microtask that follows it).
  g.__invoke = async (hook, contextJson, metaJson) => {
    current = parse(metaJson);
    if (current.seed) web.rekey(current.seed);
    let value;
    try {
      if (hook === LIST) return stringify({ outcome: "value", value: dialect.list() });
      const registered = dialect.find(hook);
      if (registered) value = await registered(parse(contextJson));
      else {
        const handler = g.middleware[hook];
        if (typeof handler !== "function") throw new Error("no handler for " + hook);
        value = await handler(parse(contextJson), tools);
      }
    } catch (err) {
      flush();
      return stringify({ outcome: "threw", message: message(err) });
    }
    flush();
    try {
      return settle(value);
    } catch (err) {
      return stringify({ outcome: "malformed", message: "returned a value that cannot be passed on (" + message(err) + ")" });
    }
  };
  g.__hooks = () => stringify(keys(g.middleware ?? {}).filter((k) => typeof g.middleware[k] === "function"));
})();
`;
