import type { RunStatus } from "../../src/db/schema/enums.ts";
import { AuthRequired } from "./api.ts";
import { h, type Child } from "./dom.ts";

/** A run status as a coloured chip (the colours are in style.css, one per status). */
export const statusChip = (status: RunStatus | string, extra = "") =>
  h("span", { class: `chip status-${status} ${extra}`.trim(), "data-status": status }, status);

export const badge = (text: string, kind = "") => h("span", { class: `badge ${kind}`.trim() }, text);

/** A section with a heading and an optional line under it. */
export const panel = (title: string, sub: Child, ...body: Child[]) =>
  h(
    "section",
    { class: "panel" },
    h("header", null, h("h2", null, title), sub ? h("span", { class: "sub" }, sub) : null),
    ...body,
  );

export const empty = (text: string) => h("p", { class: "empty" }, text);

/** Previous / next buttons and where we are, for keyset pages. */
export function pager(options: {
  label: string;
  hasPrevious: boolean;
  hasNext: boolean;
  onPrevious: () => void;
  onNext: () => void;
  onFirst?: () => void;
  testid: string;
}) {
  return h(
    "nav",
    { class: "pager", "data-testid": options.testid },
    options.onFirst
      ? h("button", { type: "button", disabled: !options.hasPrevious, onclick: options.onFirst }, "« Newest")
      : null,
    h(
      "button",
      { type: "button", class: "previous", disabled: !options.hasPrevious, onclick: options.onPrevious },
      "‹ Previous",
    ),
    h("span", { class: "where" }, options.label),
    h("button", { type: "button", class: "next", disabled: !options.hasNext, onclick: options.onNext }, "Next ›"),
  );
}

/** A modal asking to confirm an action, with an optional text field; resolves to the text, or null if dismissed. */
export function ask(options: {
  title: string;
  text: string;
  confirm: string;
  field?: { label: string; placeholder?: string };
  danger?: boolean;
}): Promise<string | null> {
  return new Promise((resolve) => {
    const input = options.field
      ? h("textarea", { name: "note", rows: 3, maxlength: 1000, placeholder: options.field.placeholder ?? "" })
      : null;
    const dialog = h(
      "dialog",
      { class: "ask" },
      h(
        "form",
        { method: "dialog" },
        h("h3", null, options.title),
        h("p", null, options.text),
        input ? h("label", null, options.field!.label, input) : null,
        h(
          "menu",
          null,
          h("button", { value: "cancel", type: "submit", formnovalidate: true }, "Cancel"),
          h(
            "button",
            { value: "ok", type: "submit", class: options.danger ? "primary danger" : "primary" },
            options.confirm,
          ),
        ),
      ),
    );
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "ok" ? (input?.value.trim() ?? "") : null);
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
    (input ?? dialog.querySelector<HTMLButtonElement>("button.primary"))?.focus();
  });
}

/** A short message in the corner. */
export function toast(text: string, kind: "ok" | "error" = "ok"): void {
  let box = document.querySelector<HTMLElement>(".toasts");
  if (!box) {
    box = h("div", { class: "toasts", role: "status", "aria-live": "polite" });
    document.body.append(box);
  }
  const item = h("div", { class: `toast ${kind}` }, text);
  box.append(item);
  setTimeout(() => item.remove(), 6000);
}

/** A label: value list. */
export const facts = (rows: [string, Child][]) =>
  h(
    "dl",
    { class: "facts" },
    ...rows
      .filter(([, v]) => v !== null && v !== undefined && v !== "")
      .map(([k, v]) => [h("dt", null, k), h("dd", null, v)]),
  );

/** Preformatted text that may be long (a prompt, an output). */
export const block = (text: string | null, what: string) =>
  text ? h("pre", { class: "block" }, text) : h("p", { class: "empty" }, `no ${what}`);

/** How an action's error is reported: a 401 asks for the token again (`fail`), anything else is a toast. */
export const reportWith =
  (fail: (err: unknown) => void) =>
  (err: unknown): void =>
    err instanceof AuthRequired ? fail(err) : toast((err as Error).message, "error");
