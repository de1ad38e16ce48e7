/**
 * What one JavaScript plugin may drive across its isolate's boundary, per plugin. The bootstrap
 * enforces these inside the isolate, before anything crosses (a refused call costs the daemon's
 * thread nothing); the daemon checks the same numbers again on its side, for a bootstrap that
 * plugin code might have subverted. Declared here once; the docs' plugin page quotes them.
 */
export const PLUGIN_BUDGETS = {
  /** The window the per-window counts below are kept over. */
  windowMs: 1_000,
  /** Log lines (console.* and host.log) per window; the rest are counted and dropped. */
  logLines: 200,
  /** Characters of log text per window. */
  logChars: 256 * 1024,
  /** One log line is cut to this many characters. */
  lineChars: 8_000,
  /** Batches of log lines sent to the daemon per window (lines are batched, not sent one by one). */
  logFlushes: 20,
  /** host.* calls in flight at once. */
  inFlight: 16,
  /** host.* calls started per window. */
  calls: 500,
  /** Characters of arguments one host call may carry. */
  callChars: 2_000_000,
  /** Characters of arguments all host calls of one window may carry. */
  callCharsPerWindow: 8_000_000,
  /** An error message or reason a plugin's code produces is cut to this many characters. */
  messageChars: 2_000,
  /**
   * Live ICU-backed objects (Intl formatters, segmenters and their iterators). Each holds tens of
   * kilobytes outside the isolate's heap, where its memory limit does not see them.
   */
  intlObjects: 1_000,
  /** CPU an isolate may use while none of its handlers is running (continuations of host calls). */
  backgroundCpuMs: 1_000,
  /** host.fetch requests in flight at once (each holds a socket). */
  fetches: 4,
  /** Until a fetch's answer headers arrive: a host that never accepts or answers holds a socket no longer. */
  fetchHeadersMs: 5_000,
  /** A whole fetch, body included. */
  fetchMs: 10_000,
  /** A fetch's body, read as it streams and cut here. */
  fetchBytes: 1_000_000,
} as const;

export type PluginBudgets = typeof PLUGIN_BUDGETS;

// Room for the mark a cut leaves, so text cut in the isolate is not cut again by the daemon.
const MARK_CHARS = 40;

/** A plugin's text cut to the budget, marked where it was cut (reasons, messages, log lines). */
export function clip(text: string, max: number = PLUGIN_BUDGETS.messageChars): string {
  return text.length <= max + MARK_CHARS ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}
