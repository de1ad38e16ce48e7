import { h, type Child } from "./dom.ts";

export interface DialogField {
  name: string;
  label: string;
  type?: "text" | "number" | "datetime-local";
  placeholder?: string;
  value?: string;
  required?: boolean;
}

/**
 * A modal form: its fields, what it shows above them, a confirm and a cancel button. Resolves to
 * the fields' values (trimmed), or null when dismissed (Escape or Cancel); the first field (else
 * the confirm button) has the focus, so every action runs from the keyboard.
 */
export function dialogForm(options: {
  title: string;
  text: Child;
  fields?: DialogField[];
  confirm: string;
  danger?: boolean;
  testid?: string;
}): Promise<Record<string, string> | null> {
  return new Promise((resolve) => {
    const inputs = (options.fields ?? []).map((f) =>
      h("input", {
        name: f.name,
        type: f.type ?? "text",
        placeholder: f.placeholder ?? "",
        value: f.value ?? "",
        required: f.required ?? false,
      }),
    );
    const dialog = h(
      "dialog",
      { class: "ask", "data-testid": options.testid ?? "dialog", "aria-label": options.title },
      h(
        "form",
        { method: "dialog" },
        h("h3", null, options.title),
        h("div", { class: "dialog-text" }, options.text),
        ...(options.fields ?? []).map((f, i) => h("label", null, f.label, inputs[i]!)),
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
    // Enter in a field confirms: the form's own implicit submission would press its first button, Cancel.
    const confirm = dialog.querySelector<HTMLButtonElement>("button.primary")!;
    for (const input of inputs)
      input.addEventListener("keydown", (event) => {
        if (event.key !== "Enter" || event.isComposing) return;
        event.preventDefault();
        dialog.querySelector("form")!.requestSubmit(confirm);
      });
    dialog.addEventListener("close", () => {
      const values = Object.fromEntries(inputs.map((input) => [input.name, input.value.trim()]));
      resolve(dialog.returnValue === "ok" ? values : null);
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
    (inputs[0] ?? confirm).focus();
  });
}
