/**
 * The part of the bootstrap that hosts plugins written for the other hook systems: a module that
 * exports `createPlugin(config, ctx)` (gateway plugins, registering with `reg.hook`), or whose
 * default export or `activate` export is a function given `ctx` (extensions, registering with
 * `ctx.hooks.on` and `ctx.hooks.intercept`). Registrations live in this closure, out of the
 * plugin's reach; the daemon lists them and calls each by its key.
 */

/** The invocation name that answers the current registrations instead of running a handler. */
export const LIST_REGISTRATIONS = "\u0001registrations";

export const DIALECTS = String.raw`(g, setup, freeze, fire, describe, stringify) => {
  const registered = new Map();
  let next = 0;
  let kind = "middleware";
  const line = (level) => (message, fields) =>
    fire("log", level, describe(message) + (fields === undefined ? "" : " " + describe(fields)));
  const logger = freeze({ debug: line("debug"), info: line("info"), warn: line("warn"), error: line("error") });
  // A shallow read-only view: in a module (strict code) setting or deleting a field throws TypeError.
  const view = (value) => (value !== null && typeof value === "object" ? freeze(value) : value);
  const add = (entry) => {
    const key = entry.kind + ":" + entry.event + "#" + next++;
    registered.set(key, entry);
    const dispose = () => void registered.delete(key);
    const disposable = { dispose };
    if (typeof Symbol.dispose === "symbol") disposable[Symbol.dispose] = dispose;
    return freeze(disposable);
  };
  const needFunction = (handler, what) => {
    if (typeof handler !== "function") throw new TypeError(what + " needs a handler function");
  };
  const hooks = freeze({
    on: (event, handler, options) => {
      needFunction(handler, "hooks.on");
      const sessionId = options && options.sessionId != null ? String(options.sessionId) : null;
      return add({ kind: "on", event: String(event), fn: handler, sessionId, priority: 0, match: null });
    },
    intercept: (name, handler, options) => {
      needFunction(handler, "hooks.intercept");
      const priority = Number.isFinite(options && options.priority) ? Number(options.priority) : 0;
      const match = options && Array.isArray(options.match) ? options.match.map(String) : null;
      return add({ kind: "intercept", event: String(name), fn: handler, sessionId: null, priority, match });
    },
  });
  const adopt = async (ns) => {
    if (typeof ns.createPlugin === "function") {
      kind = "gateway";
      const reg = freeze({
        hook: (name, handler) => {
          needFunction(handler, "reg.hook");
          add({ kind: "gateway", event: String(name), fn: handler, sessionId: null, priority: 0, match: null });
        },
      });
      const plugin = await ns.createPlugin(setup.config, freeze({ log: logger, config: setup.config }));
      if (!plugin || typeof plugin.register !== "function") throw new Error("createPlugin() returned no register(reg)");
      await plugin.register(reg);
    } else if (Object.keys(g.middleware).length === 0) {
      const activate = typeof ns.default === "function" ? ns.default : ns.activate;
      if (typeof activate === "function") {
        kind = "extension";
        await activate(freeze({ hooks, logger, log: logger, config: setup.config }));
      }
    }
    return stringify({ kind, registrations: list() });
  };
  const list = () =>
    [...registered].map(([key, r]) => ({
      key, kind: r.kind, event: r.event, sessionId: r.sessionId, priority: r.priority, match: r.match,
    }));
  const find = (key) => {
    const r = registered.get(key);
    if (!r) return null;
    if (r.kind === "gateway") return (event) => r.fn(event);
    if (r.kind === "on") return (event) => r.fn(view(event));
    return (call) => {
      const out = r.fn(view(call.input), view(call.current));
      if (r.event === "tracing.redact" && out !== null && typeof out === "object" && typeof out.then === "function") {
        out.then(undefined, () => {});
        throw new Error("a tracing.redact handler returned a promise; it must be synchronous");
      }
      return out;
    };
  };
  return { adopt, list, find };
}`;
