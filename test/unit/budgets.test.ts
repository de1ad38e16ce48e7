import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { budgetsTable } from "../../src/plugins/sandbox/budgets-table.ts";
import { clip, PLUGIN_BUDGETS } from "../../src/plugins/sandbox/budgets.ts";

describe("plugin budgets", () => {
  it("the plugins page's table is the one made from the budgets the daemon enforces", () => {
    const page = readFileSync(new URL("../../docs/plugins.md", import.meta.url), "utf8");
    expect(page).toContain(budgetsTable());
  });

  it("clip cuts a plugin's text once, marked, and leaves what it cut alone", () => {
    const long = "y".repeat(1_900_000);
    const cut = clip(long);
    expect(cut).toBe(`${"y".repeat(PLUGIN_BUDGETS.messageChars)}… (1898000 more characters)`);
    expect(clip(cut)).toBe(cut);
    expect(clip("short")).toBe("short");
  });
});
