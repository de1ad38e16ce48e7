import { z } from "zod";
import { linkDecision, rejectInput } from "../../approvals/answers.ts";
import { runView } from "../../cron/answers.ts";
import { runView as viewOf } from "../../cron/views.ts";
import { idParams } from "../params.ts";
import { route } from "../route.ts";

const runParams = idParams("run");
const tokenParams = z.object({
  token: z.string().meta({ description: "The signed link's token, as the approval notice gave it." }),
});

const decideByLink = route({
  method: "GET",
  url: "/v1/approvals/:token",
  scope: "public",
  tag: "cron",
  summary: "Decide a run waiting for approval through its signed link (GET or POST)",
  description:
    "The link names one run and one decision, signed with the daemon's secret, valid until the run's approval window ends, and spent once the run is decided (by this link, its twin or the CLI). A token that is not such a link (altered, malformed) answers 404, an expired link 410, a run already decided 409.",
  params: tokenParams,
  errors: [409, 410],
  ok: { 200: { description: "`{ action, runId, status }`", schema: linkDecision } },
  handler: async ({ services, params }) => {
    const { action, run } = await services.approvals.decideByLink(params.token);
    return { action, runId: String(run.id), status: run.status };
  },
});

/** Approval gates: an operator's decision on a run waiting AwaitingApproval, and the signed links. */
export const approvalRoutes = [
  route({
    method: "POST",
    url: "/v1/runs/:id/approve",
    scope: "operator",
    tag: "cron",
    summary: "Approve a run waiting for approval: its mission goes out now",
    description: "The caller is recorded as `approvedBy`. A run not AwaitingApproval answers 409.",
    params: runParams,
    errors: [409],
    ok: { 200: { description: "The run", schema: runView } },
    handler: async ({ services, params, actor }) => viewOf(await services.approvals.approve(params.id, actor)),
  }),
  route({
    method: "POST",
    url: "/v1/runs/:id/reject",
    scope: "operator",
    tag: "cron",
    summary: "Reject a run waiting for approval: it is Cancelled with the caller and the reason",
    params: runParams,
    body: rejectInput,
    bodyOptional: true,
    errors: [409],
    ok: { 200: { description: "The run", schema: runView } },
    handler: async ({ services, params, body, actor }) =>
      viewOf(await services.approvals.reject(params.id, actor, body?.reason ?? "")),
  }),
  decideByLink,
  route({ ...decideByLink, method: "POST" }),
];
