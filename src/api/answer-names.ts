import type { z } from "zod";
import { count, idString, instant } from "../answer-fields.ts";
import { alertList, alertNotificationView, alertView } from "../alerts/answers.ts";
import { agentView } from "../executors/answers.ts";
import {
  jobPage,
  lastRun,
  listedJob,
  listedRun,
  revisionView,
  runAttempt,
  runList,
  runStatus,
  runView,
  timelineView,
} from "../cron/answers.ts";
import { jobView } from "../cron/job-view.ts";
import { doctorReport, readiness } from "../daemon/answers.ts";
import { fileKey, jobDefinition } from "../jobs-files/answers.ts";
import { timerView } from "../notify/answers.ts";
import { approval, decisionPage, decisionView, grantsView, pluginInfo, reloadReport } from "../plugins/answers.ts";
import { clearView, listedSession, sessionView, sessionWithCounts } from "../sessions/answers.ts";
import { todoView } from "../todos/answers.ts";
import { whoami } from "./routes/health.ts";

/**
 * The answer schemas the OpenAPI document names: shared by several routes, or read by the
 * dashboard by name (ui/src/api-types.ts is printed from them). Every other route's answer is named
 * after its operation (`GetCronJobsByIdRunsAnswer`). A name here must not be one of the document's
 * other components (`Error`, the hook contexts).
 */
export const NAMED_ANSWERS: readonly (readonly [z.ZodType, string])[] = [
  [idString, "Id"],
  [instant, "Instant"],
  [count, "Count"],
  [runStatus, "RunStatus"],
  [jobView, "Job"],
  [lastRun, "LastRun"],
  [listedJob, "ListedJob"],
  [jobPage, "JobPage"],
  [runView, "Run"],
  [runAttempt, "RunAttempt"],
  [listedRun, "ListedRun"],
  [runList, "RunList"],
  [revisionView, "Revision"],
  [jobDefinition, "JobDefinition"],
  [fileKey, "JobFileKey"],
  [timelineView, "Timeline"],
  [timerView, "Timer"],
  [todoView, "Todo"],
  [sessionView, "Session"],
  [sessionWithCounts, "SessionWithCounts"],
  [listedSession, "ListedSession"],
  [clearView, "SessionClear"],
  [pluginInfo, "Plugin"],
  [grantsView, "PluginGrants"],
  [approval, "PluginApproval"],
  [reloadReport, "ReloadReport"],
  [decisionView, "Decision"],
  [decisionPage, "DecisionPage"],
  [agentView, "Agent"],
  [readiness, "Readiness"],
  [doctorReport, "DoctorReport"],
  [alertView, "Alert"],
  [alertNotificationView, "AlertNotification"],
  [alertList, "AlertList"],
  [whoami, "Whoami"],
];
