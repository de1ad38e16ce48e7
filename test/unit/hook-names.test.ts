import { describe, expect, it } from "vitest";
import { closestHook, describeUnknownHook, levenshtein } from "../../src/plugins/hooks.ts";

describe("unknown hook names", () => {
  it("counts insertions, deletions and substitutions", () => {
    expect(levenshtein("cronJobFirng", "cronJobFiring")).toBe(1);
    expect(levenshtein("kitten", "sitting")).toBe(3);
    expect(levenshtein("", "abc")).toBe(3);
  });

  it("suggests the closest hook for a slip, a wrong tense or a wrong case", () => {
    expect(closestHook("cronJobFirng")).toBe("cronJobFiring");
    expect(closestHook("cronJobFired")).toBe("cronJobFiring");
    expect(closestHook("todoAdd")).toBe("todoAdded");
    expect(closestHook("systemprompt")).toBe("systemPrompt");
  });

  it("suggests nothing for a name that is no hook's near miss", () => {
    expect(closestHook("banana")).toBeNull();
    expect(describeUnknownHook("onStartup")).toBe("onStartup");
    expect(describeUnknownHook("notifyDeliverd")).toBe("notifyDeliverd (did you mean notifyDelivered?)");
  });
});
