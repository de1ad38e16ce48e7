import { api, AuthRequired, type RunDetail } from "../../api.ts";
import { fill, h, type Child } from "../../dom.ts";
import type { Ctx, View } from "../../main.ts";
import { dateTime, span } from "../../time.ts";
import { badge, block, empty, panel, statusChip, toast } from "../../widgets.ts";
import { approvedBy, awaiting, type Decide } from "./approval.ts";
import { attemptsTable } from "./attempts.ts";

const ms = (n: number | null) => (n === null ? "—" : span(n));

/** One step of the story: when, what, and its details. */
const step = (at: string | null, title: Child, ...details: Child[]) =>
  h(
    "li",
    { class: "step" },
    h("div", { class: "when muted small" }, at ? dateTime(at) : ""),
    h("div", { class: "what" }, h("strong", null, title), ...details),
  );

function claimed(run: RunDetail) {
  const when =
    run.claimAheadMs > 0 ? `${ms(run.claimAheadMs)} ahead of its slot` : `${ms(run.latenessMs ?? 0)} after its slot`;
  return step(
    run.claimedAt,
    "Claimed",
    ` by instance `,
    h("code", { "data-testid": "claimed-by" }, run.claimedBy),
    `, ${when}`,
  );
}

function decisions(run: RunDetail) {
  if (!run.decisions.length)
    return step(null, "Plugin chain", h("span", { class: "muted" }, " no handler decided on it"));
  return run.decisions.map((d) =>
    step(
      d.at,
      `${d.plugin}: ${d.outcome}`,
      d.shadow ? badge("shadow") : null,
      h("span", { class: "muted" }, ` in ${ms(d.durationMs)}`),
      d.reason ? h("div", { class: "reason" }, d.reason) : null,
      d.fields?.length ? h("div", { class: "muted small" }, `changed ${d.fields.join(", ")}`) : null,
    ),
  );
}

function delivered(run: RunDetail) {
  if (!run.startedAt) return null;
  return step(
    run.startedAt,
    "Delivered",
    ` to ${run.executor ?? "the agent"}`,
    run.sessionId
      ? [" in session ", h("a", { href: `#/sessions?session=${encodeURIComponent(run.sessionId)}` }, run.sessionId)]
      : null,
    `, ${ms(run.deliveryLatenessMs)} after the slot`,
    attemptsTable(run),
  );
}

function finished(run: RunDetail) {
  const took = run.finishedAt && run.startedAt ? Date.parse(run.finishedAt) - Date.parse(run.startedAt) : null;
  return step(
    run.finishedAt,
    ["Result ", statusChip(run.status)],
    took !== null ? h("span", { class: "muted" }, ` after ${ms(took)}`) : null,
    run.exitCode !== null ? h("div", null, `exit code ${run.exitCode}`) : null,
    run.reason ? h("div", { class: "reason" }, run.reason, run.decidedBy ? ` (${run.decidedBy})` : "") : null,
    h("h4", null, "Output"),
    block(run.output, "output"),
  );
}

/** The approval gate, when the run met one: the decision it waits for, or who let it go out. */
function gate(run: RunDetail, decide: Decide) {
  if (run.status === "AwaitingApproval") return step(null, "Awaiting approval", ...awaiting(run, decide));
  return run.approvedBy ? step(run.approvedAt, "Approved", approvedBy(run)) : null;
}

function outcome(run: RunDetail) {
  if (run.status === "AwaitingApproval") return null;
  return run.finishedAt || run.status !== "Running" ? finished(run) : step(null, "Running…");
}

/**
 * A run's whole story, in order: slot, claim, each plugin's decision, the approval gate, the prompt
 * as fired, delivery with each attempt, result.
 */
function story(run: RunDetail, decide: Decide) {
  return h(
    "ol",
    { class: "story", "data-testid": "run-story" },
    step(
      run.scheduledFor,
      `Slot of `,
      h("a", { href: `#/job?id=${run.cronJobId}` }, run.jobName),
      ` (${run.trigger}${run.backfilled ? ", backfilled" : ""})`,
      h(
        "div",
        { class: "muted small", "data-testid": "revision" },
        run.revision !== null ? `under revision #${run.revision}` : "revision unknown",
      ),
    ),
    claimed(run),
    decisions(run),
    gate(run, decide),
    run.promptFired !== null ? step(null, "Prompt as fired", block(run.promptFired, "prompt")) : null,
    delivered(run),
    outcome(run),
  );
}

/** GET /v1/runs/:id as a page (linked from the ledger, a job's page and the alerts). */
export function runView(ctx: Ctx): View {
  let root: HTMLElement;
  let id = "";
  let shown = "";
  // A decision is followed by a reload, so the page shows the run's new status and its approver.
  const decide: Decide = (decision) =>
    void decision()
      .then((changed) => (changed ? refresh() : undefined))
      .catch((err: unknown) => (err instanceof AuthRequired ? ctx.fail(err) : toast((err as Error).message, "error")));

  async function refresh() {
    if (!id) return fill(root, empty("No run given."));
    const run = await api.get<RunDetail>(`/v1/runs/${id}`);
    const text = JSON.stringify(run);
    if (text === shown) return;
    shown = text;
    fill(root, panel(`Run ${run.id}`, h("span", null, statusChip(run.status), ` ${run.jobName}`), story(run, decide)));
  }

  return {
    mount(element, params) {
      root = element;
      id = params.get("id") ?? "";
    },
    refresh,
  };
}
