import { api, type Job } from "../../api.ts";
import type { GetCronJobsByIdTokensAnswer, PostCronJobsByIdTokensAnswer } from "../../api-types.ts";
import { dialogForm } from "../../dialog.ts";
import { h } from "../../dom.ts";
import { dateTime, relative } from "../../time.ts";
import { empty, toast } from "../../widgets.ts";

export type TriggerToken = GetCronJobsByIdTokensAnswer["tokens"][number];

export const readTokens = (jobId: string) =>
  api.get<GetCronJobsByIdTokensAnswer>(`/v1/cron-jobs/${jobId}/tokens`).then((answer) => answer.tokens);

/** Copies the text, where the page may write the clipboard; else selects it for the person to copy. */
async function copy(input: HTMLInputElement, status: HTMLElement): Promise<void> {
  input.select();
  try {
    await navigator.clipboard.writeText(input.value);
    status.textContent = "Copied.";
  } catch {
    status.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
  }
}

/** The new token's value, once: the daemon keeps only its hash, so this dialog is the only place it appears. */
async function showOnce(created: PostCronJobsByIdTokensAnswer): Promise<void> {
  const value = h("input", {
    type: "text",
    readonly: true,
    value: created.token,
    "aria-label": "Token value",
    "data-testid": "token-value",
    class: "token-value",
  });
  const status = h("span", { class: "muted small", role: "status" });
  await dialogForm({
    title: `Trigger token “${created.name}”`,
    text: [
      h(
        "p",
        { class: "warning", "data-testid": "token-warning" },
        "Copy it now: it will not be shown again. The daemon keeps only its hash; a lost token is revoked and made anew.",
      ),
      h(
        "p",
        { class: "copy-row" },
        value,
        " ",
        h("button", { type: "button", onclick: () => void copy(value, status) }, "Copy"),
        " ",
        status,
      ),
      h(
        "p",
        { class: "muted small" },
        "It can fire this job (POST /v1/cron-jobs/:id/trigger, a run with trigger event) and read its runs, nothing else.",
      ),
    ],
    confirm: "Done",
    testid: "token-created",
  });
}

/** Asks for a name, makes the token and shows its value once. */
export async function createToken(job: Job): Promise<boolean> {
  const values = await dialogForm({
    title: `New trigger token for “${job.name}”`,
    text: "A token that fires this job as an event, for a CI pipeline or a webhook. Its value is shown once.",
    fields: [{ name: "name", label: "Name", value: "default", required: true }],
    confirm: "Create",
    testid: "token-dialog",
  });
  if (!values) return false;
  const created = await api.post<PostCronJobsByIdTokensAnswer>(`/v1/cron-jobs/${job.id}/tokens`, {
    name: values.name,
  });
  await showOnce(created);
  return true;
}

async function revokeToken(job: Job, token: TriggerToken): Promise<boolean> {
  const ok = await dialogForm({
    title: `Revoke the token “${token.name}”?`,
    text: `Calls with it (${token.prefix}) are refused from now on. This cannot be undone.`,
    confirm: "Revoke",
    danger: true,
    testid: "revoke-dialog",
  });
  if (!ok) return false;
  await api.delete(`/v1/cron-jobs/${job.id}/tokens/${encodeURIComponent(token.name)}`);
  toast(`Revoked the token “${token.name}”`);
  return true;
}

/** The job's trigger tokens (never their values), each with its revoke button, and a button for a new one. */
export function tokenSection(job: Job, tokens: TriggerToken[], run: (action: () => Promise<boolean>) => void) {
  const list = tokens.length
    ? h(
        "table",
        { class: "tokens", "data-testid": "tokens" },
        h(
          "thead",
          null,
          h("tr", null, ...["Name", "Starts with", "Created", "Last used", ""].map((t) => h("th", null, t))),
        ),
        h(
          "tbody",
          null,
          ...tokens.map((t) =>
            h(
              "tr",
              { "data-token": t.name },
              h("td", null, t.name),
              h("td", null, h("code", null, t.prefix)),
              h("td", { title: t.createdAt }, `${dateTime(t.createdAt)} by ${t.createdBy}`),
              h("td", null, t.lastUsedAt ? relative(t.lastUsedAt) : "never"),
              h(
                "td",
                null,
                h(
                  "button",
                  {
                    type: "button",
                    class: "danger",
                    "aria-label": `Revoke the token ${t.name}`,
                    onclick: () => run(() => revokeToken(job, t)),
                  },
                  "Revoke",
                ),
              ),
            ),
          ),
        ),
      )
    : empty("no trigger tokens");
  return h(
    "section",
    { class: "token-section", "aria-label": "Trigger tokens" },
    h("h3", null, "Trigger tokens"),
    list,
    h("button", { type: "button", onclick: () => run(() => createToken(job)) }, "New token"),
  );
}
