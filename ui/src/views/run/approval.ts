import { api, type RunDetail } from "../../api.ts";
import { dialogForm } from "../../dialog.ts";
import { h } from "../../dom.ts";
import { dateTime, relative } from "../../time.ts";
import { toast } from "../../widgets.ts";

/** Runs a decision; it resolves true when the run was decided (the page then reloads it), false when dismissed. */
export type Decide = (decision: () => Promise<boolean>) => void;

async function approveRun(run: RunDetail): Promise<boolean> {
  const ok = await dialogForm({
    title: `Approve run ${run.id}?`,
    text: `Its mission goes out to ${run.executor ?? "the agent"} now, with you recorded as the approver.`,
    confirm: "Approve",
    testid: "approve-dialog",
  });
  if (!ok) return false;
  const decided = await api.post<RunDetail>(`/v1/runs/${run.id}/approve`);
  toast(`Approved run ${run.id}${decided.approvedBy ? ` as ${decided.approvedBy}` : ""}`);
  return true;
}

async function rejectRun(run: RunDetail): Promise<boolean> {
  const values = await dialogForm({
    title: `Reject run ${run.id}?`,
    text: "The run is Cancelled and its mission never goes out; the reason is recorded with your name.",
    fields: [{ name: "reason", label: "Reason (optional)", placeholder: "why" }],
    confirm: "Reject",
    danger: true,
    testid: "reject-dialog",
  });
  if (!values) return false;
  await api.post<RunDetail>(`/v1/runs/${run.id}/reject`, values.reason ? { reason: values.reason } : {});
  toast(`Rejected run ${run.id}`);
  return true;
}

/** The decision a run waiting for approval asks for: when it times out, and the two buttons. */
export function awaiting(run: RunDetail, decide: Decide) {
  const button = (label: string, decision: (run: RunDetail) => Promise<boolean>, extra = "") =>
    h(
      "button",
      { type: "button", class: extra, "data-action": label.toLowerCase(), onclick: () => decide(() => decision(run)) },
      label,
    );
  return [
    run.reason ? h("div", { class: "reason" }, run.reason) : null,
    h(
      "div",
      { class: "muted small", "data-testid": "approval-until" },
      run.approvalUntil
        ? `Cancelled at ${dateTime(run.approvalUntil)} (${relative(run.approvalUntil)}) if nobody decides`
        : "no time-out recorded",
    ),
    h(
      "div",
      { class: "toolbar actions", "data-testid": "approval-actions" },
      button("Approve", approveRun, "primary"),
      button("Reject", rejectRun, "danger"),
    ),
  ];
}

/** Who let a gated run go out, and when. */
export const approvedBy = (run: RunDetail) =>
  run.approvedBy ? [" by ", h("code", { "data-testid": "approved-by" }, run.approvedBy)] : null;
