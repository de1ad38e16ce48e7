import { api, ApiError, AuthRequired, type Job } from "../../api.ts";
import { fill, h } from "../../dom.ts";
import type { Ctx, View } from "../../main.ts";
import { panel, toast } from "../../widgets.ts";
import { addBody, controls, editBody } from "./controls.ts";
import { schedulePreview } from "./preview.ts";
import { promptPreview } from "./prompt-preview.ts";

/** A job a jobs file manages says so; saving needs "edit anyway" (the API's force). */
function managedNotice(job: Job): { element: HTMLElement; forced: () => boolean } | null {
  if (!job.managedBy) return null;
  const box = h("input", { type: "checkbox", id: "edit-anyway", name: "force" });
  const element = h(
    "div",
    { class: "notice", role: "note", "data-testid": "managed-by" },
    h(
      "p",
      null,
      "Managed by the jobs file ",
      h("code", null, job.managedBy),
      ": its next apply puts the file's values back.",
    ),
    h("div", { class: "field field-checkbox" }, box, h("label", { for: "edit-anyway" }, "Edit anyway")),
  );
  return { element, forced: () => box.checked };
}

/** The form that adds a job (no id) or edits one (`id`), made from the job table's fields. */
export function jobFormView(ctx: Ctx): View {
  let root: HTMLElement;
  let id: string | null = null;
  let built = false;

  function render(job: Job | null) {
    const all = controls(job);
    const managed = job ? managedNotice(job) : null;
    const problem = h("p", { class: "problem", role: "alert", "data-testid": "form-problem" });
    // A template is rendered for the schedule's next slot (now, for a job without a schedule).
    let nextSlot: string | undefined;
    const prompt = promptPreview(all, () => nextSlot ?? new Date().toISOString(), ctx.fail);
    const schedule = schedulePreview(all, ctx.fail, (fireTimes) => {
      nextSlot = fireTimes[0];
      prompt.update();
    });
    const save = async () => {
      problem.textContent = "";
      try {
        const saved = job
          ? await api.patch<Job>(`/v1/cron-jobs/${job.id}`, {
              ...editBody(job, all),
              ...(managed?.forced() ? { force: true } : {}),
            })
          : await api.post<Job>("/v1/cron-jobs", addBody(all));
        toast(job ? `Saved “${saved.name}”` : `Added “${saved.name}”`);
        ctx.go("job", { id: saved.id });
      } catch (err) {
        if (err instanceof AuthRequired || !(err instanceof ApiError)) return ctx.fail(err);
        problem.textContent = err.message;
      }
    };
    const form = h(
      "form",
      {
        class: "job-form",
        "data-testid": "job-form",
        novalidate: true,
        onsubmit: (event: Event) => {
          event.preventDefault();
          void save();
        },
      },
      managed?.element,
      h("div", { class: "fields" }, ...all.map((c) => c.element)),
      schedule,
      prompt.element,
      problem,
      h(
        "menu",
        null,
        h("button", { type: "submit", class: "primary" }, job ? "Save changes" : "Add job"),
        h("button", { type: "button", onclick: () => history.back() }, "Cancel"),
      ),
    );
    fill(root, panel(job ? `Edit “${job.name}”` : "New job", job ? `revision ${job.revisionId ?? "—"}` : null, form));
    form.querySelector<HTMLElement>("input, select, textarea")?.focus();
  }

  return {
    mount(element, params) {
      root = element;
      id = params.get("id");
      if (!id) {
        built = true;
        render(null);
      }
    },
    // The form is not live: a refresh would throw away what is being typed. An edit loads its job once.
    async refresh() {
      if (built || !id) return;
      const job = await api.get<Job>(`/v1/cron-jobs/${id}`);
      built = true;
      render(job);
    },
  };
}
