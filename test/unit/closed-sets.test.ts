import { describe, expect, it } from "vitest";
import { CALLER_SCOPES, SCOPES } from "../../src/api/scopes.ts";
import {
  CLOSED_RUN_STATUSES,
  NOTIFY_STATUSES,
  OPEN_NOTIFY_STATUSES,
  OPEN_RUN_STATUSES,
  RUN_STATUSES,
} from "../../src/db/schema/enums.ts";
import { HOOK_NAMES, singleField } from "../../src/plugins/hooks.ts";

describe("the closed sets", () => {
  it("split the run statuses into open and final ones, each once, in ledger order", () => {
    expect([...OPEN_RUN_STATUSES, ...CLOSED_RUN_STATUSES]).toEqual(RUN_STATUSES);
    expect(CLOSED_RUN_STATUSES).toContain("Succeeded");
    expect(CLOSED_RUN_STATUSES).not.toContain("Running");
  });

  it("name open notify statuses that are notify statuses", () => {
    for (const status of OPEN_NOTIFY_STATUSES) expect(NOTIFY_STATUSES).toContain(status);
    expect(OPEN_NOTIFY_STATUSES).not.toContain("Delivered");
  });

  it("give callers every scope but public", () => {
    expect([...CALLER_SCOPES].sort()).toEqual(SCOPES.filter((s) => s !== "public").sort());
  });
});

describe("the field a hook's handler answers with by itself", () => {
  it("is the one field of the hooks that change one, and none of the others'", () => {
    const answered = Object.fromEntries(HOOK_NAMES.map((hook) => [hook, singleField(hook)]));
    expect(answered).toEqual({
      systemPrompt: "systemPrompt",
      userMessageInbound: "text",
      interAgentMessage: "text",
      assistantMessageOutbound: "text",
      todoAdded: "texts",
      notifyScheduled: null,
      notifyDelivered: "message",
      sshConnectionOpening: null,
      sshCommandSending: null,
      sshCommandCompleted: null,
      sessionClearing: null,
      sessionClearCompleted: null,
      cronJobFiring: "prompt",
      cronJobCompleted: null,
    });
  });
});
