import { PLUGIN_BUDGETS } from "./budgets.ts";

const n = (value: number) => value.toLocaleString("en-US");
const per = `${n(PLUGIN_BUDGETS.windowMs)} ms`;

/**
 * The plugin page's table of budgets, made from PLUGIN_BUDGETS (a test checks docs/plugins.md holds
 * exactly this text, so the page cannot drift from the numbers the daemon enforces).
 */
export function budgetsTable(): string {
  const b = PLUGIN_BUDGETS;
  const rows: [string, string, string][] = [
    [
      "log lines (`console.*`, `host.log`)",
      `${n(b.logLines)} lines and ${n(b.logChars)} characters per ${per}, each line cut at ${n(b.lineChars)}; sent in batches (at most ${n(b.logFlushes)} per ${per})`,
      "counted and dropped; one warning says how many",
    ],
    [
      "`host.*` calls",
      `${n(b.inFlight)} in flight, ${n(b.calls)} started per ${per}; ${n(b.callChars)} characters of arguments each, ${n(b.callCharsPerWindow)} per ${per}`,
      "the call rejects at once: `host call refused: … (the plugin's budget)`",
    ],
    [
      "`host.fetch`",
      `${n(b.fetches)} requests in flight, each on a socket of its own; the answer's headers within ${n(b.fetchHeadersMs)} ms, all of it within ${n(b.fetchMs)} ms; the body read as it streams and cut at ${n(b.fetchBytes)} bytes`,
      "the call rejects with the reason",
    ],
    [
      "error messages and reasons",
      `${n(b.messageChars)} characters (stored, logged, shown)`,
      "cut, marked `… (N more characters)`",
    ],
    [
      "live `Intl` objects (formatters, segmenters, their iterators)",
      `${n(b.intlObjects)} (each holds tens of KB outside the heap)`,
      "the constructor throws a `RangeError`",
    ],
    [
      "CPU after its handlers returned (work in a host call's continuation)",
      `${n(b.backgroundCpuMs)} ms, refilled at a tenth of the time passing`,
      "the isolate is disposed and reloaded on the next call",
    ],
  ];
  return [
    "| what a plugin drives | its budget | past it |",
    "|---|---|---|",
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
}
