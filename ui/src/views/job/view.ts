import { api, AuthRequired, type Job, type RevisionList, type Run } from "../../api.ts";
import type { GetRunSummaryAnswer } from "../../api-types.ts";
import { fill, h } from "../../dom.ts";
import type { Ctx, View } from "../../main.ts";
import { dateTime, scheduleInWords } from "../../time.ts";
import { badge, block, facts, panel, toast } from "../../widgets.ts";
import { backfillJob, deleteJob, pauseJob, resumeJob, skipJob, triggerJob } from "./actions.ts";
import { latenessChart, successChart, type DayCounts } from "./chart.ts";
import { revisionTimeline, runLinks } from "./history.ts";
import { exportJobs } from "../jobs/export.ts";
import { readTokens, tokenSection, type TriggerToken } from "./tokens.ts";

const DAY = 86_400_000;
const CHART_DAYS = 14;

interface Loaded {
  job: Job;
  revisions: RevisionList["revisions"];
  runs: Run[];
  tokens: TriggerToken[];
}

async function load(id: string): Promise<Loaded> {
  const [job, { revisions }, { runs }, tokens] = await Promise.all([
    api.get<Job>(`/v1/cron-jobs/${id}`),
    api.get<RevisionList>(`/v1/cron-jobs/${id}/revisions`),
    api.get<{ runs: Run[] }>(`/v1/cron-jobs/${id}/runs`, { limit: 30 }),
    readTokens(id),
  ]);
  return { job, revisions, runs, tokens };
}

/** One UTC day's counts of the job, from the run summary (the ledger's rows and retention's rollups). */
const dayCounts = (id: string, from: number) =>
  api
    .get<GetRunSummaryAnswer>("/v1/run-summary", {
      jobId: id,
      from: new Date(from).toISOString(),
      to: new Date(from + DAY).toISOString(),
    })
    .then((answer) => answer.summary);

// The days before today change only by a backfill or a late close: read again at most once a minute,
// so a job whose runs redraw its page every few seconds asks for today alone.
const PAST_DAYS_MS = 60_000;
let pastDays: { key: string; at: number; counts: Promise<DayCounts[]> } | null = null;

/**
 * Two weeks of the job's runs per UTC day, from the run summary, so a day retention pruned keeps its
 * bar. The slowest read, so the page is drawn without waiting for it.
 */
function chartLater(id: string, box: HTMLElement): void {
  const today = Math.floor(Date.now() / DAY) * DAY;
  const key = `${id}@${today}`;
  if (pastDays?.key !== key || Date.now() - pastDays.at > PAST_DAYS_MS) {
    const days = Array.from({ length: CHART_DAYS - 1 }, (_, i) => today - (CHART_DAYS - 1 - i) * DAY);
    pastDays = { key, at: Date.now(), counts: Promise.all(days.map((from) => dayCounts(id, from))) };
  }
  const past = pastDays;
  Promise.all([past.counts, dayCounts(id, today)])
    .then(([before, now]) => fill(box, successChart([...before, now])))
    .catch(() => {
      if (pastDays === past) pastDays = null; // a failed read is not kept
      fill(box, h("p", { class: "muted small" }, "the success rate could not be read"));
    });
}

function actionBar(job: Job, run: (action: (job: Job) => Promise<boolean>) => void, edit: () => void) {
  const button = (label: string, action: (job: Job) => Promise<boolean>, extra = "") =>
    h(
      "button",
      { type: "button", class: extra, "data-action": label.toLowerCase(), onclick: () => run(action) },
      label,
    );
  return h(
    "div",
    { class: "toolbar actions", "data-testid": "job-actions" },
    h("button", { type: "button", "data-action": "edit", onclick: edit }, "Edit"),
    job.paused ? button("Resume", resumeJob) : button("Pause", pauseJob),
    button("Trigger", triggerJob),
    button("Skip", skipJob),
    button("Backfill", backfillJob),
    button("Export", (j) => exportJobs(j).then(() => false)),
    button("Delete", deleteJob, "danger"),
  );
}

function summary(job: Job) {
  return facts([
    ["Description", job.description],
    ["Agent", h("a", { href: `#/agents?agent=${encodeURIComponent(job.agentId)}` }, job.agentId)],
    ["Schedule", `${scheduleInWords(job)} (${job.cron ?? `every ${job.every}`}, ${job.timezone})`],
    ["Next fire", job.paused ? "—" : job.nextFireAt ? dateTime(job.nextFireAt, job.timezone) : "no further slots"],
    [
      "State",
      job.paused
        ? `paused${job.pausedNote ? `: ${job.pausedNote}` : ""}${job.pausedUntil ? ` (until ${dateTime(job.pausedUntil)})` : ""}`
        : "active",
    ],
    ["Skipping", job.skip ? `${job.skip.remaining} slot(s)${job.skip.reason ? `: ${job.skip.reason}` : ""}` : null],
    ["Managed by", job.managedBy ? h("code", null, job.managedBy) : null],
    [
      "Session",
      job.sessionId ? h("a", { href: `#/sessions?session=${encodeURIComponent(job.sessionId)}` }, job.sessionId) : null,
    ],
  ]);
}

/** One job: its settings and actions, its runs and charts beside its revisions. */
export function jobView(ctx: Ctx): View {
  let root: HTMLElement;
  let id = "";
  let seq = 0;
  let shown = "";

  function render({ job, revisions, runs, tokens }: Loaded) {
    const chart = h("div", { class: "chart-slot" });
    chartLater(job.id, chart);
    const act = (action: (job: Job) => Promise<boolean>) =>
      void action(job)
        .then((changed) => {
          if (!changed) return;
          if (action === deleteJob) return ctx.go("jobs");
          shown = "";
          return refresh();
        })
        .catch((err: unknown) =>
          err instanceof AuthRequired ? ctx.fail(err) : toast((err as Error).message, "error"),
        );
    fill(
      root,
      panel(
        job.name,
        h(
          "span",
          null,
          job.kind === "heartbeat" ? "heartbeat" : "cron job",
          " ",
          job.paused ? badge("paused", "paused") : badge("active", "active"),
        ),
        actionBar(job, act, () => ctx.go("job-edit", { id: job.id })),
        h(
          "div",
          { class: "split job-page" },
          h(
            "div",
            null,
            summary(job),
            h("h3", null, "Prompt"),
            block(job.prompt, "prompt"),
            h("h3", null, "Runs"),
            chart,
            latenessChart(runs),
            runLinks(runs, job.timezone),
            tokenSection(job, tokens, (action) => act(action)),
          ),
          h("aside", { class: "detail" }, h("h3", null, "Revisions"), revisionTimeline(revisions)),
        ),
      ),
    );
  }

  async function refresh() {
    const mine = ++seq;
    const loaded = await load(id);
    // Rebuilt only when something changed, so the focus stays where the keyboard left it.
    const text = JSON.stringify(loaded);
    if (mine !== seq || text === shown || document.querySelector("dialog[open]")) return;
    shown = text;
    render(loaded);
  }

  return {
    mount(element, params) {
      root = element;
      id = params.get("id") ?? "";
    },
    refresh,
  };
}
