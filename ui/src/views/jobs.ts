import { api, AuthRequired, type Job, type JobPage, type Run } from "../api.ts";
import { debounce, fill, h, plural } from "../dom.ts";
import type { Ctx, View } from "../main.ts";
import { dateTime, nextIntervalSlots, relative, scheduleInWords } from "../time.ts";
import { ask, badge, block, empty, facts, pager, panel, statusChip, toast } from "../widgets.ts";

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

export function lastRunCell(job: Job) {
  const last = job.lastRun;
  if (!last) return h("span", { class: "muted" }, "no runs yet");
  return h(
    "span",
    { class: "last-run", title: last.reason ?? "" },
    statusChip(last.status),
    " ",
    h("span", { class: "muted" }, relative(last.scheduledFor)),
    last.decidedBy ? h("span", { class: "by" }, ` by ${last.decidedBy}`) : null,
  );
}

/** Every cron job and heartbeat, a page at a time: schedule in words, next fire, last outcome; pause, resume, trigger. */
export function jobsView(ctx: Ctx): View {
  let q = "";
  let cursors: (string | undefined)[] = [undefined];
  let selected: string | undefined;
  let page: JobPage | null = null;
  let seq = 0;
  const table = h("div", { class: "table-wrap" });
  const detail = h("aside", { class: "detail", hidden: true });
  const count = h("span", { class: "count", "data-testid": "job-count" });
  const pagerBox = h("div");

  const remember = () => ctx.remember({ q: q || undefined, after: cursors.at(-1), job: selected });

  async function act(job: Job, action: "pause" | "resume" | "trigger") {
    try {
      if (action === "pause") {
        const note = await ask({
          title: `Pause “${job.name}”?`,
          text: "No slot is claimed while it is paused, and none is written Missed. Resuming restarts it from its next slot.",
          field: { label: "Note (optional)", placeholder: "why, and until when" },
          confirm: "Pause",
        });
        if (note === null) return;
        await api.post<Job>(`/v1/cron-jobs/${job.id}/pause`, note ? { note } : {});
        toast(`Paused “${job.name}”`);
      } else if (action === "resume") {
        await api.post<Job>(`/v1/cron-jobs/${job.id}/resume`);
        toast(`Resumed “${job.name}”`);
      } else {
        const ok = await ask({
          title: `Trigger “${job.name}” now?`,
          text: "A manual run starts now, outside the schedule, through the plugin chain like any slot (the overlap policy does not apply).",
          confirm: "Trigger now",
          danger: true,
        });
        if (ok === null) return;
        const run = await api.post<Run>(`/v1/cron-jobs/${job.id}/trigger`);
        // The answer comes once the slot is claimed; the chain and the mission follow (the ledger shows them).
        toast(
          `Triggered “${job.name}”: run ${run.id}, ${run.status === "Claimed" ? "claimed, going through the plugin chain" : run.status}`,
        );
      }
      await refresh();
    } catch (err) {
      if (err instanceof AuthRequired) return ctx.fail(err);
      toast((err as Error).message, "error");
    }
  }

  function row(job: Job) {
    return h(
      "tr",
      {
        "data-job-id": job.id,
        class: [job.paused ? "paused" : "", job.id === selected ? "selected" : ""].join(" ").trim(),
      },
      h(
        "td",
        null,
        h("button", { type: "button", class: "link name", onclick: () => select(job.id) }, job.name),
        job.kind === "heartbeat" ? badge("heartbeat", "kind") : null,
        h("div", { class: "muted small" }, `agent ${job.agentId}`),
      ),
      h(
        "td",
        null,
        h("div", null, scheduleInWords(job)),
        h("div", { class: "muted small" }, h("code", null, job.cron ?? `every ${job.every}`), ` · ${job.timezone}`),
      ),
      h(
        "td",
        null,
        job.paused
          ? h("span", { class: "muted" }, "—")
          : job.nextFireAt
            ? [
                h("div", null, dateTime(job.nextFireAt, job.timezone)),
                h("div", { class: "muted small" }, relative(job.nextFireAt)),
              ]
            : h("span", { class: "muted" }, "no further slots"),
      ),
      h("td", null, lastRunCell(job)),
      h(
        "td",
        { class: "state" },
        job.paused
          ? [
              badge("paused", "paused"),
              job.pausedNote ? h("div", { class: "note", "data-testid": "paused-note" }, job.pausedNote) : null,
            ]
          : badge("active", "active"),
      ),
      h(
        "td",
        { class: "actions" },
        job.paused
          ? h("button", { type: "button", "data-action": "resume", onclick: () => void act(job, "resume") }, "Resume")
          : h("button", { type: "button", "data-action": "pause", onclick: () => void act(job, "pause") }, "Pause"),
        h(
          "button",
          { type: "button", "data-action": "trigger", onclick: () => void act(job, "trigger") },
          "Trigger now",
        ),
      ),
    );
  }

  function select(id: string | undefined) {
    selected = id;
    remember();
    void refresh();
  }

  async function renderDetail(job: Job | undefined, runs: Run[], slots: string[]) {
    detail.hidden = !job;
    if (!job) return fill(detail);
    fill(
      detail,
      h(
        "header",
        null,
        h("h2", null, job.name),
        h("button", { type: "button", class: "link", onclick: () => select(undefined), "aria-label": "Close" }, "✕"),
      ),
      facts([
        ["Kind", job.kind === "heartbeat" ? "heartbeat" : "cron job"],
        ["Agent", job.agentId],
        ["Schedule", `${scheduleInWords(job)} (${job.cron ?? `every ${job.every}`}, ${job.timezone})`],
        ["State", job.paused ? `paused${job.pausedNote ? `: ${job.pausedNote}` : ""}` : "active"],
        ["Overlap", job.overlapPolicy],
        ["Catch-up", job.catchupPolicy],
        ["Jitter", job.jitter],
        ["Skip if busy", job.skipIfBusy ? "yes" : null],
        ["Session", job.sessionMode === "fixed" ? `fixed: ${job.sessionId}` : "a fresh session per run"],
        [
          "Window",
          job.startsAt || job.endsAt
            ? `${job.startsAt ? dateTime(job.startsAt, job.timezone) : "…"} → ${job.endsAt ? dateTime(job.endsAt, job.timezone) : "…"}`
            : null,
        ],
        ["Max runs", job.maxRuns ? `${job.runCount} of ${job.maxRuns} used` : null],
      ]),
      h("h3", null, "Next fire times"),
      job.paused
        ? empty("none while paused")
        : slots.length
          ? h(
              "ol",
              { class: "slots", "data-testid": "next-fires" },
              ...slots.map((s) =>
                h("li", null, dateTime(s, job.timezone), h("span", { class: "muted" }, ` ${relative(s)}`)),
              ),
            )
          : empty("no further slots"),
      h("h3", null, "Prompt"),
      block(job.prompt, "prompt"),
      h(
        "h3",
        null,
        "Latest runs ",
        h(
          "button",
          { type: "button", class: "link", onclick: () => ctx.go("ledger", { job: job.id }) },
          "open in the ledger →",
        ),
      ),
      runs.length
        ? h(
            "ul",
            { class: "mini-runs" },
            ...runs.map((r) =>
              h(
                "li",
                { title: r.reason ?? "" },
                statusChip(r.status),
                " ",
                dateTime(r.scheduledFor, job.timezone),
                r.decidedBy ? h("span", { class: "by" }, ` by ${r.decidedBy}`) : null,
              ),
            ),
          )
        : empty("no runs yet"),
    );
  }

  async function refresh() {
    const mine = ++seq;
    const after = cursors.at(-1);
    const next = await api.get<JobPage>("/v1/cron-jobs", { limit: JOBS_PAGE, after, q: q || undefined });
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
    const first = cursors.length === 1;
    count.textContent = q ? `${plural(page.total, "job")} matching “${q}”` : plural(page.total, "job");
    fill(
      table,
      page.jobs.length
        ? h(
            "table",
            { class: "jobs", "data-testid": "jobs-table" },
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                ...["Job", "Schedule", "Next fire (job's zone)", "Last run", "State", ""].map((t) => h("th", null, t)),
              ),
            ),
            h("tbody", null, ...page.jobs.map(row)),
          )
        : empty(q ? "No job matches." : "No jobs yet. Add one with `missiond cron add` or POST /v1/cron-jobs."),
    );
    const start = (cursors.length - 1) * JOBS_PAGE;
    fill(
      pagerBox,
      pager({
        testid: "jobs-pager",
        label: page.jobs.length
          ? `${start + 1}–${start + page.jobs.length} of ${page.total.toLocaleString("en-US")}`
          : "",
        hasPrevious: !first,
        hasNext: page.next !== null,
        onPrevious: () => {
          cursors = cursors.slice(0, -1);
          remember();
          void refresh();
        },
        onNext: () => {
          cursors = [...cursors, page!.next!];
          remember();
          void refresh();
        },
      }),
    );
    await renderDetail(job, runs, slots);
  }

  return {
    mount(root, params) {
      q = params.get("q") ?? "";
      const after = params.get("after");
      cursors = after ? [undefined, after] : [undefined];
      selected = params.get("job") ?? undefined;
      const search = h("input", {
        type: "search",
        value: q,
        placeholder: "Find a job by name",
        "aria-label": "Find a job by name",
        oninput: debounce((event: Event) => {
          q = (event.target as HTMLInputElement).value.trim();
          cursors = [undefined];
          remember();
          void refresh().catch(ctx.fail);
        }, 250),
      });
      fill(
        root,
        panel(
          "Jobs",
          count,
          h("div", { class: "toolbar" }, search, pagerBox),
          h("div", { class: "split" }, table, detail),
        ),
      );
    },
    refresh,
  };
}
