import { RUN_STATUSES, type RunStatus } from "../../../../src/db/schema/enums.ts";
import { api, type JobPage } from "../../api.ts";
import { debounce, fill, h } from "../../dom.ts";
import { fromLocalInput, toLocalInput } from "../../time.ts";
import { RANGES, rangeOf, type Filter } from "./filter.ts";

/** The ledger's filter bar: job (with suggestions), status, range and a custom range's ends. */
export interface Controls {
  readonly bar: HTMLElement;
  /** Shows the filter's status and range (after the filter changed elsewhere). */
  sync(): void;
  /** Filters on one job (or every job), shown by name when given. */
  setJob(id: string | undefined, name?: string): void;
  /** Shows a job's name in the job box, without changing the filter. */
  showJob(name: string): void;
}

/** Builds the filter bar; `changed` runs after each change it makes to `filter`. */
export function ledgerControls(filter: Filter, changed: () => void): Controls {
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

  const setJob = (id: string | undefined, name?: string) => {
    filter.job = id;
    jobInput.value = name ?? (id ? `job ${id}` : "");
    changed();
  };
  const sync = () => {
    statusSelect.value = filter.status ?? "";
    rangeSelect.value = filter.range;
    customBox.hidden = filter.range !== "custom";
    if (filter.from) fromInput.value = toLocalInput(filter.from);
    if (filter.to) toInput.value = toLocalInput(filter.to);
  };

  const suggest = debounce(async (text: string) => {
    const page = await api.get<JobPage>("/v1/cron-jobs", { q: text || undefined, limit: 20 }).catch(() => null);
    if (!page) return;
    for (const j of page.jobs) knownJobs.set(j.name, j.id);
    fill(jobOptions, ...page.jobs.map((j) => h("option", { value: j.name })));
    // A name typed out in full picks its job, as choosing the suggestion does.
    const typed = knownJobs.get(jobInput.value.trim());
    if (typed && typed !== filter.job) setJob(typed, jobInput.value.trim());
  }, 200);

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
      const w = rangeOf({ range: "1h" });
      filter.from ??= w.from;
      filter.to ??= w.to;
    }
    sync();
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

  const bar = h(
    "div",
    { class: "filters", "data-testid": "ledger-filters" },
    h("label", null, "Job ", jobInput, jobOptions),
    h("button", { type: "button", class: "link", onclick: () => setJob(undefined) }, "all jobs"),
    h("label", null, "Status ", statusSelect),
    h("label", null, "Range ", rangeSelect),
    customBox,
  );
  const showJob = (name: string) => {
    jobInput.value = name;
  };
  return { bar, sync, setJob, showJob };
}
