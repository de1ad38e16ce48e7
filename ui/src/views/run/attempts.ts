import type { RunAttempt, RunDetail } from "../../api.ts";
import { h } from "../../dom.ts";
import { span } from "../../time.ts";
import { statusChip } from "../../widgets.ts";

const HEADERS = ["#", "Status", "Duration", "Answer", "Output or error"];

/** What the agent's end answered: an HTTP status (webhook, llm) or a command's exit code. */
const answered = (a: RunAttempt) =>
  a.httpStatus !== null ? `HTTP ${a.httpStatus}` : a.exitCode !== null ? `exit ${a.exitCode}` : "—";

// A lost attempt (its instance stopped mid-delivery) says so in words, beside its Unknown chip.
const status = (a: RunAttempt) => [statusChip(a.status), a.status === "Unknown" ? " lost" : null];

const row = (a: RunAttempt) =>
  h(
    "tr",
    { "data-testid": "attempt" },
    h("th", { scope: "row" }, `#${a.number}`),
    h("td", null, status(a)),
    h("td", null, a.durationMs !== null ? span(a.durationMs) : "—"),
    h("td", null, answered(a)),
    h("td", null, a.excerpt ? h("code", { class: "excerpt" }, a.excerpt) : h("span", { class: "muted" }, "—")),
  );

/** Each attempt at delivering the run, oldest first: a retried run's earlier failures stay visible. */
export function attemptsTable(run: RunDetail) {
  if (!run.attemptHistory.length) return null;
  return [
    h("h4", { id: `run-${run.id}-attempts` }, "Attempts"),
    h(
      "table",
      { class: "attempts", "data-testid": "attempts", "aria-labelledby": `run-${run.id}-attempts` },
      h("thead", null, h("tr", null, ...HEADERS.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, ...run.attemptHistory.map(row)),
    ),
  ];
}
