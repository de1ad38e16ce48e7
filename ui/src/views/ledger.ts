import { api, type Job, type Run, type Timeline } from "../api.ts";
import { fill, h } from "../dom.ts";
import type { Ctx, View } from "../main.ts";
import { dateTime } from "../time.ts";
import { PageTrail } from "../pages.ts";
import { pager, panel, reportWith } from "../widgets.ts";
import { ledgerControls } from "./ledger/controls.ts";
import { BUCKETS, filterParams, rangeOf, readFilter, type Filter } from "./ledger/filter.ts";
import { runDetail, runsTable } from "./ledger/runs.ts";
import { timelineBody, type TimelineActions } from "./ledger/timeline.ts";
import { ledgerActions, readSummary, summaryTable } from "./ledger/summary.ts";

export const RUNS_PAGE = 50;
export const LANES_PAGE = 20;

/** The filter's range now, with its timeline and page of runs, read together. */
async function readLedger(filter: Filter, laneCursor: string | undefined, runCursor: string | undefined) {
  const range = rangeOf(filter);
  const common = { jobId: filter.job, status: filter.status };
  const [timeline, page] = await Promise.all([
    api.get<Timeline>("/v1/run-timeline", {
      ...common,
      from: range.from,
      to: range.to,
      buckets: BUCKETS,
      limit: LANES_PAGE,
      after: laneCursor,
    }),
    // A preset range has no end for the list, so runs claimed since appear on the newest page.
    api.get<{ runs: Run[] }>("/v1/runs", {
      ...common,
      from: range.from,
      to: range.sliding ? undefined : range.to,
      limit: RUNS_PAGE,
      before: runCursor,
    }),
  ]);
  return { range, timeline, page };
}

/** Pages of job lanes, in the timeline's order. */
function lanesPager(t: Timeline, pages: PageTrail, again: () => void) {
  if (!t.lanes.length) return null;
  const start = pages.offset(LANES_PAGE);
  return pager({
    testid: "lanes-pager",
    label: `jobs ${start + 1}–${start + t.lanes.length}`,
    hasPrevious: !pages.onFirst,
    hasNext: t.next !== null,
    onPrevious: () => {
      pages.back();
      again();
    },
    onNext: () => {
      pages.forward(t.next!);
      again();
    },
  });
}

/** Pages of runs, newest first. */
function runsPager(runs: Run[], pages: PageTrail, again: () => void) {
  const start = pages.offset(RUNS_PAGE);
  return pager({
    testid: "runs-pager",
    label: runs.length ? `runs ${start + 1}–${start + runs.length}, newest first` : "",
    hasPrevious: !pages.onFirst,
    hasNext: runs.length === RUNS_PAGE,
    onFirst: () => {
      pages.reset();
      again();
    },
    onPrevious: () => {
      pages.back();
      again();
    },
    onNext: () => {
      pages.forward(runs.at(-1)!.id);
      again();
    },
  });
}

/** The run ledger: a timeline per job coloured by status, and the runs themselves, filtered and paged. */
export function ledgerView(ctx: Ctx): View {
  const filter: Filter = { range: "1h" };
  const runPages = new PageTrail();
  const lanePages = new PageTrail();
  let selected: Run | null = null;
  let runs: Run[] = [];
  let seq = 0;

  const timelineBox = h("div", { class: "timeline", "data-testid": "timeline" });
  const timelinePager = h("div");
  const runsBox = h("div", { class: "table-wrap" });
  const runsPagerBox = h("div");
  const detail = h("aside", { class: "detail", hidden: true, "data-testid": "run-detail" });
  const rangeNote = h("span", { class: "sub" });
  /** The per-job and status counts are read only while shown: over every job they are more than a page. */
  let withSummary = false;
  const summaryTableBox = h("div", { class: "table-wrap" });
  const summaryBox = panel(
    "Summary",
    "runs per job and status in the range, every status, pruned runs included",
    summaryTableBox,
  );
  summaryBox.hidden = true;
  const remember = () => ctx.remember({ ...filterParams(filter), summary: withSummary ? "1" : undefined });
  const again = () => void refresh().catch(ctx.fail);
  /** The filter changed: back to the first page of both. */
  const changed = () => {
    runPages.reset();
    lanePages.reset();
    remember();
    again();
  };
  const controls = ledgerControls(filter, changed);
  const timelineActions: TimelineActions = {
    pickCell(lane, from, to) {
      filter.job = lane.jobId;
      controls.showJob(lane.name);
      filter.range = "custom";
      filter.from = new Date(from).toISOString();
      filter.to = new Date(to).toISOString();
      controls.sync();
      changed();
    },
    pickJob: (lane) => controls.setJob(lane.jobId, lane.name),
  };

  function select(run: Run | null) {
    selected = run;
    remember();
    for (const tr of runsBox.querySelectorAll("tr[data-run-id]"))
      tr.classList.toggle("selected", tr.getAttribute("data-run-id") === run?.id);
    renderDetail();
  }

  function renderDetail() {
    detail.hidden = !selected;
    if (!selected) fill(detail);
    else fill(detail, ...runDetail(selected, () => select(null)));
  }

  function renderTimeline(t: Timeline) {
    fill(timelineBox, ...timelineBody(t, timelineActions));
    fill(timelinePager, lanesPager(t, lanePages, again));
  }

  async function refresh() {
    const mine = ++seq;
    const onNewest = runPages.onFirst;
    const [{ range, timeline, page }, summary] = await Promise.all([
      readLedger(filter, lanePages.cursor, runPages.cursor),
      withSummary ? readSummary(filter) : null,
    ]);
    if (mine !== seq) return;
    summaryBox.hidden = !summary;
    if (summary) fill(summaryTableBox, summaryTable(summary));
    rangeNote.textContent = `${dateTime(range.from)} → ${range.sliding ? "now" : dateTime(range.to)}${onNewest && range.sliding ? " · live" : ""}`;
    renderTimeline(timeline);
    runs = page.runs;
    if (selected) selected = runs.find((r) => r.id === selected!.id) ?? selected;
    fill(runsBox, runsTable(runs, selected?.id, select));
    fill(runsPagerBox, runsPager(runs, runPages, again));
    renderDetail();
  }

  return {
    mount(root, params) {
      readFilter(filter, params);
      withSummary = params.get("summary") === "1";
      const actions = ledgerActions(filter, withSummary, {
        toggleSummary(on) {
          withSummary = on;
          remember();
          again();
        },
        fail: reportWith(ctx.fail),
      });
      controls.sync();
      if (filter.job) {
        controls.showJob(`job ${filter.job}`);
        void api
          .get<Job>(`/v1/cron-jobs/${filter.job}`)
          .then((j) => controls.showJob(j.name))
          .catch(() => {});
      }
      fill(
        root,
        controls.bar,
        actions,
        summaryBox,
        panel("Timeline", rangeNote, timelineBox, timelinePager),
        h("div", { class: "split" }, panel("Runs", null, runsBox, runsPagerBox), detail),
      );
    },
    refresh,
  };
}
