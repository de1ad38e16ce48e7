import { api, type Run } from "../../api.ts";
import type { GetRunSummaryAnswer } from "../../api-types.ts";
import { download } from "../../download.ts";
import { h } from "../../dom.ts";
import { empty, statusChip, toast } from "../../widgets.ts";
import { rangeOf, type Filter } from "./filter.ts";

type SummaryRow = GetRunSummaryAnswer["summary"][number];

/** `runs ls --summary` for the filter's job and range: counts per job and status, pruned runs included. */
export const readSummary = (filter: Filter) => {
  const range = rangeOf(filter);
  return api
    .get<GetRunSummaryAnswer>("/v1/run-summary", { jobId: filter.job, from: range.from, to: range.to })
    .then((answer) => answer.summary);
};

const dollars = (n: number) => `$${n.toFixed(2)}`;
const number = (n: number) => n.toLocaleString("en-US");

/** The summary as the CLI's columns; the status filter does not apply (it counts every status, as the CLI does). */
export function summaryTable(rows: SummaryRow[]) {
  if (!rows.length) return empty("no runs in this range");
  const total = (pick: (r: SummaryRow) => number) => rows.reduce((sum, r) => sum + pick(r), 0);
  const heads = ["Job", "Agent", "Status", "Runs", "Of which pruned", "Tokens in", "Tokens out", "Cost"];
  return h(
    "table",
    { class: "summary", "data-testid": "run-summary" },
    h("thead", null, h("tr", null, ...heads.map((t) => h("th", null, t)))),
    h(
      "tbody",
      null,
      ...rows.map((r) =>
        h(
          "tr",
          { "data-job-id": r.jobId, "data-status": r.status },
          h("td", null, h("a", { href: `#/job?id=${r.jobId}` }, r.jobName)),
          h("td", null, r.agentId),
          h("td", null, statusChip(r.status)),
          h("td", { class: "num", "data-testid": "count" }, number(r.count)),
          h("td", { class: "num" }, number(r.rolledUp)),
          h("td", { class: "num" }, number(r.inputTokens)),
          h("td", { class: "num" }, number(r.outputTokens)),
          h("td", { class: "num", "data-testid": "cost" }, dollars(r.costUsd)),
        ),
      ),
    ),
    h(
      "tfoot",
      null,
      h(
        "tr",
        null,
        h("th", { colspan: 3 }, "All"),
        h("td", { class: "num", "data-testid": "total-count" }, number(total((r) => r.count))),
        h("td", { class: "num" }, number(total((r) => r.rolledUp))),
        h("td", { class: "num" }, number(total((r) => r.inputTokens))),
        h("td", { class: "num" }, number(total((r) => r.outputTokens))),
        h("td", { class: "num", "data-testid": "total-cost" }, dollars(total((r) => r.costUsd))),
      ),
    ),
  );
}

/** The API's largest page of runs. */
const EXPORT_PAGE = 1000;

/**
 * `runs export` from the page: the runs the filter selects (job, status, range), newest slot first,
 * as JSON lines of the API's run shape (what the CLI prints), read a page at a time by cursor.
 */
export async function exportRuns(filter: Filter): Promise<void> {
  const range = rangeOf(filter);
  const lines: string[] = [];
  let before: string | undefined;
  for (;;) {
    const { runs } = await api.get<{ runs: Run[] }>("/v1/runs", {
      jobId: filter.job,
      status: filter.status,
      from: range.from,
      to: range.to,
      limit: EXPORT_PAGE,
      before,
    });
    for (const run of runs) lines.push(`${JSON.stringify(run)}\n`);
    if (runs.length < EXPORT_PAGE) break;
    before = runs.at(-1)!.id;
  }
  const day = (iso: string) => iso.slice(0, 10);
  download(`runs-${day(range.from)}-${day(range.to)}.jsonl`, lines.join(""), "application/jsonl");
  toast(`Exported ${lines.length === 1 ? "1 run" : `${lines.length} runs`} as JSON lines`);
}

/** The ledger's Summary switch (its state in aria-pressed) and its Export runs button. */
export function ledgerActions(
  filter: Filter,
  withSummary: boolean,
  on: { toggleSummary(on: boolean): void; fail(err: unknown): void },
) {
  const toggle = h(
    "button",
    {
      type: "button",
      "aria-pressed": String(withSummary),
      onclick: () => {
        const next = toggle.getAttribute("aria-pressed") !== "true";
        toggle.setAttribute("aria-pressed", String(next));
        on.toggleSummary(next);
      },
    },
    "Summary",
  );
  const exportButton = h(
    "button",
    { type: "button", onclick: () => void exportRuns(filter).catch(on.fail) },
    "Export runs",
  );
  // One group: the toolbar spreads its children apart.
  return h("div", { class: "toolbar", "data-testid": "ledger-actions" }, h("span", null, toggle, " ", exportButton));
}
