import { api, ApiError, AuthRequired, type Job, type JobPage, type Query, type Run } from "../api.ts";
import { debounce, fill, h, plural } from "../dom.ts";
import type { Ctx, View } from "../main.ts";
import { nextIntervalSlots } from "../time.ts";
import { empty, pager, panel, toast } from "../widgets.ts";
import { jobAction, type JobAction } from "./jobs/actions.ts";
import { jobDetail } from "./jobs/detail.ts";
import { jobRow } from "./jobs/row.ts";
import { exportAllButton } from "./jobs/export.ts";

export { lastRunCell } from "./jobs/last-run.ts";

export const JOBS_PAGE = 50;

const previews = new Map<string, { at: number; times: string[] }>();

/** The next slots of a job's schedule (cron through the API's preview, cached briefly; intervals computed). */
async function nextSlots(job: Job, count: number): Promise<string[]> {
  if (!job.nextFireAt) return [];
  if (!job.cron) return nextIntervalSlots(job.nextFireAt, job.every ?? "", count);
  const key = `${job.cron}|${job.timezone}`;
  const cached = previews.get(key);
  if (cached && Date.now() - cached.at < 30_000 && Date.parse(cached.times[0] ?? "") > Date.now()) return cached.times;
  const { fireTimes } = await api.get<{ fireTimes: string[] }>("/v1/cron-preview", {
    cron: job.cron,
    timezone: job.timezone,
    count,
  });
  previews.set(key, { at: Date.now(), times: fireTimes });
  return fireTimes;
}

const jobsTable = (rows: HTMLElement[]) =>
  h(
    "table",
    { class: "jobs", "data-testid": "jobs-table" },
    h("thead", null, h("tr", null, ...HEADERS.map((t) => h("th", null, t)))),
    h("tbody", null, ...rows),
  );

const NO_JOBS = "No jobs yet. Add one with New job, `missiond cron add` or POST /v1/cron-jobs.";

const newJobButton = (ctx: Ctx) =>
  h("button", { type: "button", class: "primary", onclick: () => ctx.go("job-new") }, "New job");

const detailLinks = (ctx: Ctx, job: Job, close: () => void) => ({
  close,
  openLedger: () => ctx.go("ledger", { job: job.id }),
  openPage: () => ctx.go("job", { id: job.id }),
});

/**
 * A page of jobs; null when the API refused the labels typed, which `problem` then says beside the
 * box (the operator's typing, not a failure of the page: the list shown stays).
 */
async function readJobs(query: Query, problem: HTMLElement): Promise<JobPage | null> {
  try {
    const page = await api.get<JobPage>("/v1/cron-jobs", query);
    problem.textContent = "";
    return page;
  } catch (err) {
    if (!(err instanceof ApiError) || !query.label) throw err;
    problem.textContent = `Label: ${err.message}`;
    return null;
  }
}

/** Previous and next over the pages seen (`cursors`, the last the page shown). */
function jobsPager(page: JobPage, cursors: (string | undefined)[], go: (cursors: (string | undefined)[]) => void) {
  const start = (cursors.length - 1) * JOBS_PAGE;
  return pager({
    testid: "jobs-pager",
    label: page.jobs.length ? `${start + 1}–${start + page.jobs.length} of ${page.total.toLocaleString("en-US")}` : "",
    hasPrevious: cursors.length > 1,
    hasNext: page.next !== null,
    onPrevious: () => go(cursors.slice(0, -1)),
    onNext: () => go([...cursors, page.next!]),
  });
}

/** A search box that calls `changed` with its trimmed text once typing pauses. */
const searchBox = (label: string, placeholder: string, value: string, changed: (text: string) => void) =>
  h("input", {
    type: "search",
    value,
    placeholder,
    "aria-label": label,
    oninput: debounce((event: Event) => changed((event.target as HTMLInputElement).value.trim()), 250),
  });

const HEADERS = ["Job", "Schedule", "Next fire (job's zone)", "Last run", "State", ""];

/** Every cron job and heartbeat, a page at a time: schedule in words, next fire, last outcome; pause, resume, trigger. */
export function jobsView(ctx: Ctx): View {
  let q = "";
  /** `cron ls --label`: key=value pairs joined by commas, every one carried. */
  let label = "";
  let cursors: (string | undefined)[] = [undefined];
  let selected: string | undefined;
  let page: JobPage | null = null;
  let seq = 0;
  const table = h("div", { class: "table-wrap" });
  const detail = h("aside", { class: "detail", hidden: true });
  const count = h("span", { class: "count", "data-testid": "job-count" });
  const pagerBox = h("div");

  const remember = () =>
    ctx.remember({ q: q || undefined, label: label || undefined, after: cursors.at(-1), job: selected });
  const labelProblem = h("span", { class: "problem", role: "alert", "data-testid": "label-problem" });

  async function act(job: Job, action: JobAction) {
    try {
      if (await jobAction(job, action)) await refresh();
    } catch (err) {
      if (err instanceof AuthRequired) return ctx.fail(err);
      toast((err as Error).message, "error");
    }
  }

  const row = (job: Job) => jobRow(job, { selected, select, act });

  function select(id: string | undefined) {
    selected = id;
    remember();
    void refresh();
  }

  function renderDetail(job: Job | undefined, runs: Run[], slots: string[]) {
    detail.hidden = !job;
    if (!job) return fill(detail);
    fill(
      detail,
      ...jobDetail(
        job,
        runs,
        slots,
        detailLinks(ctx, job, () => select(undefined)),
      ),
    );
  }

  async function refresh() {
    const mine = ++seq;
    const after = cursors.at(-1);
    const next = await readJobs(
      { limit: JOBS_PAGE, after, q: q || undefined, label: label || undefined },
      labelProblem,
    );
    if (!next) return;
    let job = selected ? next.jobs.find((j) => j.id === selected) : undefined;
    if (selected && !job) job = await api.get<Job>(`/v1/cron-jobs/${selected}`).catch(() => undefined);
    const [runs, slots] = job
      ? await Promise.all([
          api.get<{ runs: Run[] }>(`/v1/cron-jobs/${job.id}/runs`, { limit: 10 }).then((r) => r.runs),
          nextSlots(job, 5).catch(() => []),
        ])
      : [[], []];
    if (mine !== seq) return;
    page = next;
    const matching = [q ? `“${q}”` : "", label ? `labels ${label}` : ""].filter(Boolean).join(" and ");
    count.textContent = matching ? `${plural(page.total, "job")} matching ${matching}` : plural(page.total, "job");
    fill(table, page.jobs.length ? jobsTable(page.jobs.map(row)) : empty(q || label ? "No job matches." : NO_JOBS));
    fill(
      pagerBox,
      jobsPager(page, cursors, (moved) => {
        cursors = moved;
        remember();
        void refresh();
      }),
    );
    renderDetail(job, runs, slots);
  }

  return {
    mount(root, params) {
      q = params.get("q") ?? "";
      label = params.get("label") ?? "";
      const after = params.get("after");
      cursors = after ? [undefined, after] : [undefined];
      selected = params.get("job") ?? undefined;
      const typed = (apply: (text: string) => void) => (text: string) => {
        apply(text);
        cursors = [undefined];
        remember();
        void refresh().catch(ctx.fail);
      };
      const search = searchBox(
        "Find a job by name",
        "Find a job by name",
        q,
        typed((text) => (q = text)),
      );
      const labels = searchBox(
        "Only jobs with these labels",
        "Labels, e.g. team=ops",
        label,
        typed((text) => (label = text)),
      );
      fill(
        root,
        panel(
          "Jobs",
          count,
          h("div", { class: "toolbar" }, search, labels, newJobButton(ctx), exportAllButton(ctx.fail), pagerBox),
          labelProblem,
          h("div", { class: "split" }, table, detail),
        ),
      );
    },
    refresh,
  };
}
