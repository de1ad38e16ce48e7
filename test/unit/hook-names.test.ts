import { describe, expect, it } from "vitest";
import { editDistance } from "../../src/did-you-mean.ts";
import { closestHook, describeUnknownHook } from "../../src/plugins/hooks.ts";

describe("unknown hook names", () => {
  it("counts insertions, deletions and substitutions", () => {
    expect(editDistance("cronJobFirng", "cronJobFiring")).toBe(1);
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("", "abc")).toBe(3);
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
