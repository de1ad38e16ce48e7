import { api, RUN_STATUSES, type Job, type JobPage, type Run, type RunStatus, type Timeline } from "../api.ts";
import { debounce, fill, h, plural } from "../dom.ts";
import type { Ctx, View } from "../main.ts";
import { clock, dateTime, fromLocalInput, span, toLocalInput } from "../time.ts";
import { badge, block, empty, facts, pager, panel, statusChip } from "../widgets.ts";

export const RUNS_PAGE = 50;
export const LANES_PAGE = 20;
const BUCKETS = 60;

const RANGES: Record<string, number> = { "15m": 9e5, "1h": 3.6e6, "6h": 2.16e7, "24h": 8.64e7, "7d": 6.048e8 };
const CLOSED: RunStatus[] = [
  "Succeeded",
  "Failed",
  "TimedOut",
  "Cancelled",
  "Skipped",
  "Missed",
  "Deferred",
  "Unknown",
];

interface Filter {
  job?: string | undefined;
  status?: RunStatus | undefined;
  /** A preset ("1h", sliding with now) or "custom" with from/to. */
  range: string;
  from?: string | undefined;
  to?: string | undefined;
}

/** [from, to) of the filter now. A preset's end is rounded up to a bucket, so cells stay put as it slides. */
function window(filter: Filter, now = Date.now()): { from: string; to: string; sliding: boolean } {
  if (filter.range === "custom" && filter.from && filter.to)
    return { from: filter.from, to: filter.to, sliding: false };
  const length = RANGES[filter.range] ?? RANGES["1h"]!;
  const bucket = length / BUCKETS;
  const end = Math.ceil((now + 1) / bucket) * bucket;
  return { from: new Date(end - length).toISOString(), to: new Date(end).toISOString(), sliding: true };
}

/** The run ledger: a timeline per job coloured by status, and the runs themselves, filtered and paged. */
export function ledgerView(ctx: Ctx): View {
  const filter: Filter = { range: "1h" };
  let runCursors: (string | undefined)[] = [undefined];
  let laneCursors: (string | undefined)[] = [undefined];
  let selected: Run | null = null;
  let runs: Run[] = [];
  let seq = 0;

  const timelineBox = h("div", { class: "timeline", "data-testid": "timeline" });
  const timelinePager = h("div");
  const runsBox = h("div", { class: "table-wrap" });
  const runsPager = h("div");
  const detail = h("aside", { class: "detail", hidden: true, "data-testid": "run-detail" });
  const rangeNote = h("span", { class: "sub" });
  const jobInput = h("input", {
    type: "search",
    list: "job-options",
    placeholder: "All jobs",
    "aria-label": "Job",
    name: "job",
  });
  const jobOptions = h("datalist", { id: "job-options" });
  const statusSelect = h(
    "select",
    { "aria-label": "Status", name: "status" },
    h("option", { value: "" }, "All statuses"),
    ...RUN_STATUSES.map((s) => h("option", { value: s }, s)),
  );
  const rangeSelect = h(
    "select",
    { "aria-label": "Time range", name: "range" },
    ...Object.keys(RANGES).map((r) => h("option", { value: r }, `Last ${r}`)),
    h("option", { value: "custom" }, "Custom…"),
  );
  const fromInput = h("input", { type: "datetime-local", "aria-label": "From", name: "from" });
  const toInput = h("input", { type: "datetime-local", "aria-label": "To", name: "to" });
  const customBox = h("span", { class: "custom", hidden: true }, fromInput, " → ", toInput);
  const knownJobs = new Map<string, string>(); // name → id, from the suggestions

  function remember() {
    ctx.remember({
      job: filter.job,
      status: filter.status,
      range: filter.range === "1h" ? undefined : filter.range,
      from: filter.range === "custom" ? filter.from : undefined,
      to: filter.range === "custom" ? filter.to : undefined,
    });
  }

  function changed() {
    runCursors = [undefined];
    laneCursors = [undefined];
    remember();
    void refresh().catch(ctx.fail);
  }

  function setJob(id: string | undefined, name?: string) {
    filter.job = id;
    jobInput.value = name ?? (id ? `job ${id}` : "");
    changed();
  }

  const suggest = debounce(async (text: string) => {
    const page = await api.get<JobPage>("/v1/cron-jobs", { q: text || undefined, limit: 20 }).catch(() => null);
    if (!page) return;
    for (const j of page.jobs) knownJobs.set(j.name, j.id);
    fill(jobOptions, ...page.jobs.map((j) => h("option", { value: j.name })));
    // A name typed out in full picks its job, as choosing the suggestion does.
    const typed = knownJobs.get(jobInput.value.trim());
    if (typed && typed !== filter.job) setJob(typed, jobInput.value.trim());
  }, 200);

  function lane(l: Timeline["lanes"][number], t: Timeline) {
    const totals = new Map<number, Map<RunStatus, number>>();
    for (const [i, status, n] of l.cells) (totals.get(i) ?? totals.set(i, new Map()).get(i)!).set(status, n);
    let max = 1;
    for (const m of totals.values())
      max = Math.max(
        max,
        [...m.values()].reduce((a, b) => a + b, 0),
      );
    const from = Date.parse(t.from);
    const columns = Array.from({ length: t.buckets }, (_, i) => {
      const counts = totals.get(i);
      if (!counts) return h("div", { class: "cell" });
      const start = from + i * t.bucketMs;
      const label = `${clock(start)}–${clock(start + t.bucketMs)}: ${[...counts].map(([s, n]) => `${n} ${s}`).join(", ")}`;
      const sum = [...counts.values()].reduce((a, b) => a + b, 0);
      return h(
        "button",
        {
          type: "button",
          class: "cell filled",
          title: label,
          "aria-label": `${l.name} ${label}`,
          onclick: () => {
            filter.job = l.jobId;
            jobInput.value = l.name;
            filter.range = "custom";
            filter.from = new Date(start).toISOString();
            filter.to = new Date(start + t.bucketMs).toISOString();
            syncControls();
            changed();
          },
        },
        h(
          "span",
          { class: "stack", style: { height: `${Math.max(12, (sum / max) * 100)}%` } },
          ...RUN_STATUSES.filter((s) => counts.has(s)).map((s) =>
            h("span", { class: `seg status-${s}`, style: { height: `${(counts.get(s)! / sum) * 100}%` } }),
          ),
        ),
      );
    });
    return h(
      "div",
      { class: "lane", "data-job-id": l.jobId },
      h(
        "button",
        {
          type: "button",
          class: "link lane-name",
          title: `${l.name}: ${plural(l.total, "run")} in range`,
          onclick: () => setJob(l.jobId, l.name),
        },
        l.name,
        l.removed ? h("span", { class: "muted" }, " (removed)") : null,
      ),
      h("div", { class: "cells" }, ...columns, ...l.revisions.map((r) => revisionMarker(r, t))),
      h("span", { class: "lane-total muted small" }, l.total.toLocaleString("en-US")),
    );
  }

  /** A change to the job (edit, pause…): a thin mark at its moment, described in its tooltip. */
  function revisionMarker(r: Timeline["lanes"][number]["revisions"][number], t: Timeline) {
    const from = Date.parse(t.from);
    const left = ((Date.parse(r.at) - from) / (Date.parse(t.to) - from)) * 100;
    const title = `revision ${r.revision}: ${r.action} by ${r.actor} at ${dateTime(r.at)}${r.note ? ` (${r.note})` : ""}`;
    return h("span", { class: "revision-mark", title, "aria-label": title, style: { left: `${left}%` } });
  }

  function renderTimeline(t: Timeline) {
    const from = Date.parse(t.from);
    const to = Date.parse(t.to);
    fill(
      timelineBox,
      t.lanes.length
        ? [
            ...t.lanes.map((l) => lane(l, t)),
            h(
              "div",
              { class: "axis" },
              h("span", null, dateTime(t.from)),
              h("span", null, clock((from + to) / 2)),
              h("span", null, dateTime(t.to)),
            ),
          ]
        : empty("No runs in this range."),
      h(
        "div",
        { class: "legend" },
        ...CLOSED.map((s) => statusChip(s)),
        h("span", { class: "muted small" }, ` · one column = ${span(t.bucketMs)}`),
      ),
    );
    const start = (laneCursors.length - 1) * LANES_PAGE;
    fill(
      timelinePager,
      t.lanes.length
        ? pager({
            testid: "lanes-pager",
            label: `jobs ${start + 1}–${start + t.lanes.length}`,
            hasPrevious: laneCursors.length > 1,
            hasNext: t.next !== null,
            onPrevious: () => {
              laneCursors = laneCursors.slice(0, -1);
              void refresh().catch(ctx.fail);
            },
            onNext: () => {
              laneCursors = [...laneCursors, t.next!];
              void refresh().catch(ctx.fail);
            },
          })
        : null,
    );
  }

  function runRow(run: Run) {
    return h(
      "tr",
      {
        "data-run-id": run.id,
        "data-status": run.status,
        class: run.id === selected?.id ? "selected" : "",
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
      h("td", { class: "num" }, run.latenessMs === null ? "—" : `${run.latenessMs} ms`),
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

  function select(run: Run | null) {
    selected = run;
    remember();
    for (const tr of runsBox.querySelectorAll("tr[data-run-id]"))
      tr.classList.toggle("selected", tr.getAttribute("data-run-id") === run?.id);
    renderDetail();
  }

  function renderDetail() {
    const run = selected;
    detail.hidden = !run;
    if (!run) return fill(detail);
    fill(
      detail,
      h(
        "header",
        null,
        h("h2", null, `Run ${run.id}`),
        h("button", { type: "button", class: "link", onclick: () => select(null), "aria-label": "Close" }, "✕"),
      ),
      facts([
        ["Status", statusChip(run.status)],
        ["Job", `${run.jobName ?? ""} (${run.cronJobId})`],
        ["Slot", dateTime(run.scheduledFor)],
        ["Trigger", run.trigger],
        ["Decided by", run.decidedBy],
        ["Reason", run.reason],
        [
          "Lateness",
          run.latenessMs === null
            ? null
            : run.latenessMs < 0
              ? `claimed ${-run.latenessMs} ms ahead of the slot`
              : `${run.latenessMs} ms after the slot${run.backfilled ? " (backfilled)" : ""}`,
        ],
        ["Claimed", run.claimedAt ? `${dateTime(run.claimedAt)} by ${run.claimedBy}` : run.claimedBy],
        ["Started", run.startedAt ? dateTime(run.startedAt) : null],
        ["Finished", run.finishedAt ? dateTime(run.finishedAt) : null],
        ["Session", run.sessionId],
        ["Executor", run.executor ? `${run.executor}${run.exitCode !== null ? `, exit ${run.exitCode}` : ""}` : null],
      ]),
      h("h3", null, "Prompt as fired"),
      block(
        run.promptFired,
        run.status === "Cancelled" ? "prompt: the chain cancelled the slot before it fired" : "prompt fired",
      ),
      h("h3", null, "Executor output"),
      block(run.output, "output"),
    );
  }

  function syncControls() {
    statusSelect.value = filter.status ?? "";
    rangeSelect.value = filter.range;
    customBox.hidden = filter.range !== "custom";
    if (filter.from) fromInput.value = toLocalInput(filter.from);
    if (filter.to) toInput.value = toLocalInput(filter.to);
  }

  async function refresh() {
    const mine = ++seq;
    const range = window(filter);
    const onNewest = runCursors.length === 1;
    const common = { jobId: filter.job, status: filter.status };
    const [timeline, page] = await Promise.all([
      api.get<Timeline>("/v1/run-timeline", {
        ...common,
        from: range.from,
        to: range.to,
        buckets: BUCKETS,
        limit: LANES_PAGE,
        after: laneCursors.at(-1),
      }),
      // A preset range has no end for the list, so runs claimed since appear on the newest page.
      api.get<{ runs: Run[] }>("/v1/runs", {
        ...common,
        from: range.from,
        to: range.sliding ? undefined : range.to,
        limit: RUNS_PAGE,
        before: runCursors.at(-1),
      }),
    ]);
    if (mine !== seq) return;
    rangeNote.textContent = `${dateTime(range.from)} → ${range.sliding ? "now" : dateTime(range.to)}${onNewest && range.sliding ? " · live" : ""}`;
    renderTimeline(timeline);
    runs = page.runs;
    if (selected) selected = runs.find((r) => r.id === selected!.id) ?? selected;
    const start = (runCursors.length - 1) * RUNS_PAGE;
    fill(
      runsBox,
      runs.length
        ? h(
            "table",
            { class: "runs", "data-testid": "runs-table" },
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                ...["Slot", "Job", "Status", "Late", "Decided by / reason", "Claimed by"].map((t) => h("th", null, t)),
              ),
            ),
            h("tbody", null, ...runs.map(runRow)),
          )
        : empty("No runs match."),
    );
    fill(
      runsPager,
      pager({
        testid: "runs-pager",
        label: runs.length ? `runs ${start + 1}–${start + runs.length}, newest first` : "",
        hasPrevious: !onNewest,
        hasNext: runs.length === RUNS_PAGE,
        onFirst: () => {
          runCursors = [undefined];
          void refresh().catch(ctx.fail);
        },
        onPrevious: () => {
          runCursors = runCursors.slice(0, -1);
          void refresh().catch(ctx.fail);
        },
        onNext: () => {
          runCursors = [...runCursors, runs.at(-1)!.id];
          void refresh().catch(ctx.fail);
        },
      }),
    );
    renderDetail();
  }

  return {
    mount(root, params) {
      filter.job = params.get("job") ?? undefined;
      const status = params.get("status");
      filter.status = (RUN_STATUSES as readonly string[]).includes(status ?? "") ? (status as RunStatus) : undefined;
      const range = params.get("range") ?? "1h";
      filter.range = range in RANGES || range === "custom" ? range : "1h";
      filter.from = params.get("from") ?? undefined;
      filter.to = params.get("to") ?? undefined;
      if (filter.range === "custom" && !(filter.from && filter.to)) filter.range = "1h";
      syncControls();
      if (filter.job) {
        jobInput.value = `job ${filter.job}`;
        void api
          .get<Job>(`/v1/cron-jobs/${filter.job}`)
          .then((j) => (jobInput.value = j.name))
          .catch(() => {});
      }

      jobInput.addEventListener("input", () => {
        const name = jobInput.value.trim();
        const id = knownJobs.get(name);
        if (id && id !== filter.job) setJob(id, name);
        else if (!name && filter.job) setJob(undefined);
        else suggest(name);
      });
      jobInput.addEventListener("focus", () => suggest(jobInput.value.trim()));
      statusSelect.addEventListener("change", () => {
        filter.status = (statusSelect.value || undefined) as RunStatus | undefined;
        changed();
      });
      rangeSelect.addEventListener("change", () => {
        filter.range = rangeSelect.value;
        if (filter.range === "custom") {
          const w = window({ range: "1h" });
          filter.from ??= w.from;
          filter.to ??= w.to;
        }
        syncControls();
        changed();
      });
      for (const input of [fromInput, toInput]) {
        input.addEventListener("change", () => {
          const from = fromLocalInput(fromInput.value);
          const to = fromLocalInput(toInput.value);
          if (from && to && Date.parse(to) > Date.parse(from)) {
            filter.from = from;
            filter.to = to;
            changed();
          }
        });
      }
      fill(
        root,
        h(
          "div",
          { class: "filters", "data-testid": "ledger-filters" },
          h("label", null, "Job ", jobInput, jobOptions),
          h("button", { type: "button", class: "link", onclick: () => setJob(undefined) }, "all jobs"),
          h("label", null, "Status ", statusSelect),
          h("label", null, "Range ", rangeSelect),
          customBox,
        ),
        panel("Timeline", rangeNote, timelineBox, timelinePager),
        h("div", { class: "split" }, panel("Runs", null, runsBox, runsPager), detail),
      );
    },
    refresh,
  };
}
