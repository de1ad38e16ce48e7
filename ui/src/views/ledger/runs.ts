import type { Run } from "../../api.ts";
import { h } from "../../dom.ts";
import { dateTime } from "../../time.ts";
import { badge, block, empty, facts, statusChip } from "../../widgets.ts";

const COLUMNS = ["Slot", "Job", "Status", "Late", "Usage", "Decided by / reason", "Claimed by"];

/** What a run reported it used, short: tokens in + out, and its cost. */
function usageCell(usage: Run["usage"]): string {
  if (!usage) return "—";
  const tokens =
    usage.inputTokens === null && usage.outputTokens === null
      ? null
      : `${(usage.inputTokens ?? 0) + (usage.outputTokens ?? 0)} tok`;
  const cost = usage.costUsd === null ? null : `$${usage.costUsd.toFixed(usage.costUsd < 0.01 ? 4 : 2)}`;
  return [tokens, cost].filter(Boolean).join(" · ") || "—";
}

/** The whole report, for the detail panel. */
function usageText(usage: Run["usage"]): string | null {
  if (!usage) return null;
  const parts = [
    usage.inputTokens === null ? null : `${usage.inputTokens} tokens in`,
    usage.outputTokens === null ? null : `${usage.outputTokens} out`,
    usage.costUsd === null ? null : `$${usage.costUsd}`,
    usage.model,
  ];
  return parts.filter(Boolean).join(", ");
}

/** One run as a row of the runs table; Enter or a click selects it. */
function runRow(run: Run, selected: boolean, select: (run: Run) => void) {
  return h(
    "tr",
    {
      "data-run-id": run.id,
      "data-status": run.status,
      class: selected ? "selected" : "",
      tabindex: 0,
      onclick: () => select(run),
      onkeydown: (e: Event) => {
        if ((e as KeyboardEvent).key === "Enter") select(run);
      },
    },
    h("td", null, dateTime(run.scheduledFor)),
    h("td", null, run.jobName ?? `job ${run.cronJobId}`),
    h(
      "td",
      null,
      statusChip(run.status),
      run.trigger !== "schedule" ? badge(run.trigger) : null,
      run.backfilled ? badge("backfilled") : null,
    ),
    h("td", { class: "num" }, run.deliveryLatenessMs === null ? "—" : `${run.deliveryLatenessMs} ms`),
    h("td", { class: "num" }, usageCell(run.usage)),
    h(
      "td",
      { class: "why" },
      run.decidedBy ? h("strong", { class: "by" }, run.decidedBy) : null,
      run.decidedBy && run.reason ? ": " : null,
      run.reason ?? (run.decidedBy ? "" : h("span", { class: "muted" }, "—")),
    ),
    h("td", { class: "muted small" }, run.claimedBy),
  );
}

/** The page of runs, newest first, or a note that none match. */
export function runsTable(runs: Run[], selectedId: string | undefined, select: (run: Run) => void) {
  return runs.length
    ? h(
        "table",
        { class: "runs", "data-testid": "runs-table" },
        h("thead", null, h("tr", null, ...COLUMNS.map((t) => h("th", null, t)))),
        h("tbody", null, ...runs.map((run) => runRow(run, run.id === selectedId, select))),
      )
    : empty("No runs match.");
}

/** How late the agent got it: slot → delivery started (never negative; the claim ahead is apart). */
function lateness(run: Run): string | null {
  if (run.deliveryLatenessMs === null) return null;
  return `${run.deliveryLatenessMs} ms from the slot to delivery${run.backfilled ? " (backfilled)" : ""}`;
}

/** Everything the ledger knows of one run, for the detail panel beside the table. */
export function runDetail(run: Run, close: () => void) {
  return [
    h(
      "header",
      null,
      h("h2", null, `Run ${run.id}`),
      h("button", { type: "button", class: "link", onclick: close, "aria-label": "Close" }, "✕"),
    ),
    h("p", null, h("a", { href: `#/run?id=${run.id}`, "data-testid": "run-page-link" }, "The run's whole story →")),
    facts([
      ["Status", statusChip(run.status)],
      ["Job", `${run.jobName ?? ""} (${run.cronJobId})`],
      ["Slot", dateTime(run.scheduledFor)],
      ["Trigger", run.trigger],
      ["Decided by", run.decidedBy],
      ["Reason", run.reason],
      ["Lateness", lateness(run)],
      [
        "Claimed",
        `${dateTime(run.claimedAt)} by ${run.claimedBy}${run.claimAheadMs > 0 ? `, ${run.claimAheadMs} ms ahead of the slot` : ""}`,
      ],
      ["Started", run.startedAt ? dateTime(run.startedAt) : null],
      ["Finished", run.finishedAt ? dateTime(run.finishedAt) : null],
      [
        "Session",
        run.sessionId
          ? h("a", { href: `#/sessions?session=${encodeURIComponent(run.sessionId)}` }, run.sessionId)
          : null,
      ],
      ["Executor", run.executor ? `${run.executor}${run.exitCode !== null ? `, exit ${run.exitCode}` : ""}` : null],
      ["Usage", usageText(run.usage)],
    ]),
    h("h3", null, "Prompt as fired"),
    block(
      run.promptFired,
      run.status === "Cancelled" ? "prompt: the chain cancelled the slot before it fired" : "prompt fired",
    ),
    h("h3", null, "Executor output"),
    block(run.output, "output"),
  ];
}
