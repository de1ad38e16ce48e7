import { z } from "zod";
import { count, idString, instant } from "../answer-fields.ts";
import { DECISION_OUTCOMES } from "../db/schema/enums.ts";

/**
 * What the plugin routes answer: plugin-info.ts PluginInfo, service.ts LoadReport, install.ts
 * InstallAnswer, consented-load.ts ApprovalAnswer, queries.ts DecisionView, and the chains' results.
 */

export const grantsView = z
  .object({
    permissions: z.array(z.string()),
    fetch: z.array(z.string()),
    fs: z.array(z.object({ path: z.string(), access: z.enum(["read", "read-write"]) }).strict()),
    env: z.array(z.string()),
  })
  .strict();

export const approval = z
  .object({
    revision: count,
    source: z.enum(["installed", "adopted", "approved"]),
    actor: z.string(),
    at: instant,
    grants: grantsView,
    digest: z.string(),
    dir: z.string(),
  })
  .strict();

const pluginState = z.enum(["active", "suspended", "restarting", "failed", "missing", "disabled"]);

export const pluginInfo = z
  .object({
    name: z.string(),
    version: z.string().nullable(),
    kind: z.enum(["isolate", "command", "python"]).nullable(),
    dialect: z.string().nullable(),
    dir: z.string(),
    order: z.number().nullable(),
    position: count.nullable(),
    section: count.nullable(),
    generation: count,
    required: z.boolean(),
    shadow: z.boolean(),
    permissions: z.array(z.string()),
    grants: grantsView,
    digest: z.string().nullable(),
    approval: approval.nullable(),
    changed: z.boolean(),
    needsApproval: z.boolean(),
    requested: z
      .object({ grants: grantsView, added: z.array(z.string()) })
      .strict()
      .nullable(),
    hooks: z.array(z.string()),
    errors: count,
    state: pluginState,
    error: z.string().nullable(),
    restarts: count,
    consecutiveFailures: count,
    suspendedUntil: instant.nullable(),
  })
  .strict();

export const pluginList = z.object({ plugins: z.array(pluginInfo) }).strict();

/** A reload (daemon/reload.ts ReloadReport). */
export const reloadReport = z
  .object({
    generation: count,
    loaded: z.array(
      z
        .object({
          name: z.string(),
          version: z.string(),
          order: z.number(),
          position: count,
          hooks: z.array(z.string()),
        })
        .strict(),
    ),
    failed: z.array(z.object({ name: z.string(), dir: z.string(), error: z.string() }).strict()),
    warnings: z.array(z.string()),
    hookErrors: z.array(z.object({ hook: z.string(), error: z.string() }).strict()),
  })
  .strict();

export const installAnswer = z
  .object({
    name: z.string(),
    version: z.string(),
    description: z.string().nullable(),
    kind: z.enum(["isolate", "command", "python"]),
    hooks: z.array(z.string()),
    grants: grantsView,
    dir: z.string(),
    exists: z.boolean(),
    installed: z.boolean(),
    warnings: z.array(z.string()).describe("What the install let through under on-missing-grant warn."),
  })
  .strict();

export const approveAnswer = z
  .object({
    name: z.string(),
    dir: z.string(),
    grants: grantsView,
    digest: z.string(),
    previous: approval.nullable(),
    added: z.array(z.string()),
    changed: z.boolean(),
    pending: z.boolean(),
    approved: approval.nullable(),
    reload: reloadReport.optional().describe("Absent on a dry run."),
  })
  .strict();

/** A generation record: its plugins as the daemon that loaded them recorded them (approval-store.ts). */
export const generationList = z
  .object({
    generations: z.array(
      z
        .object({
          instance: z.string(),
          generation: count,
          at: instant,
          plugins: z.array(
            z.object({
              name: z.string(),
              version: z.string().nullable(),
              state: pluginState,
              grants: grantsView,
              digest: z.string().nullable(),
              approval: z.object({ revision: count, source: z.string(), actor: z.string() }).strict().nullable(),
              changed: z.boolean(),
              needsApproval: z.boolean(),
              requested: z.array(z.string()).nullable(),
            }),
          ),
        })
        .strict(),
    ),
  })
  .strict();

const outcome = z.enum(DECISION_OUTCOMES);

/** One handler's decision (queries.ts DecisionView). */
export const decisionView = z
  .object({
    id: idString,
    plugin: z.string(),
    hook: z.string(),
    subjectId: z.string().nullable(),
    at: instant,
    durationMs: count,
    outcome,
    fields: z.array(z.string()).nullable(),
    reason: z.string().nullable(),
    shadow: z.boolean(),
    instance: z.string(),
    generation: count.nullable(),
  })
  .strict();

export const decisionPage = z
  .object({
    decisions: z.array(decisionView),
    counts: z
      .object(
        Object.fromEntries(DECISION_OUTCOMES.map((o) => [o, count])) as Record<
          (typeof DECISION_OUTCOMES)[number],
          typeof count
        >,
      )
      .strict()
      .describe("How many of the page had each outcome."),
  })
  .strict();

/**
 * POST /v1/hooks/:hook. A contract hook's chain answers cancelled or not; a hook of another hook
 * system answers in that system's own shape (an object).
 */
export const hookAnswer = z.union([
  z.object({ cancelled: z.literal(true), reason: z.string(), plugin: z.string() }).strict(),
  z
    .object({
      cancelled: z.literal(false),
      value: z.unknown().describe("The hook's mutable field after the chain (several as an object; null for none)."),
      changedBy: z.array(z.string()),
      context: z.record(z.string(), z.unknown()),
    })
    .strict(),
  // Never `cancelled`: that is the contract's answer, which must match one of the two above.
  z
    .record(z.string().regex(/^(?!cancelled$)/), z.unknown())
    .describe("Another hook system's answer, in its own shape."),
]);

export const interceptAnswer = z
  .object({
    result: z.unknown().optional(),
    endedBy: z.string().nullable().describe("The extension that ended the chain."),
  })
  .strict();

export const observeAnswer = z.object({ extensions: count }).strict();

/** `plugins disable` / `plugins enable`: the plugin's standing now, and the reload that applied it. */
export const switchAnswer = z
  .object({ name: z.string(), state: z.enum(["disabled", "enabled"]), reload: reloadReport })
  .strict();

/** `plugins rm`: what was removed, and the reload that took it out of the chain. */
export const removeAnswer = z
  .object({
    name: z.string(),
    dir: z.string().describe("The folder that was deleted."),
    approvalsRemoved: count.describe("Its approval revisions, deleted with it."),
    reload: reloadReport,
  })
  .strict();
