import { describe, expect, it } from "vitest";
import { RUN_STATUSES } from "../../src/db/schema/enums.ts";
import { anyCaseEnum, canonicalCase, validate } from "../../src/validation.ts";

describe("statuses typed in any case", () => {
  it("map to the canonical value", () => {
    expect(canonicalCase(RUN_STATUSES, "cancelled")).toBe("Cancelled");
    expect(canonicalCase(RUN_STATUSES, "TIMEDOUT")).toBe("TimedOut");
    expect(canonicalCase(RUN_STATUSES, "Succeeded")).toBe("Succeeded");
    expect(canonicalCase(RUN_STATUSES, "succeed")).toBeUndefined();
  });

  it("pass a schema built with anyCaseEnum as the canonical value; others fail listing the values", () => {
    const status = anyCaseEnum(RUN_STATUSES);
    expect(validate(status, "succeeded")).toBe("Succeeded");
    expect(() => validate(status, "done", "status")).toThrow(
      /^status: must be one of "Claimed", "AwaitingApproval", "Running", /,
    );
    expect(() => validate(status, 3, "status")).toThrow(/^status: /);
  });
});
