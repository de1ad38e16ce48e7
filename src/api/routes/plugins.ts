import { z } from "zod";
import { MissiondError } from "../../errors.ts";
import { RUNTIME_HOOK_CONTEXTS, isRuntimeHook } from "../../plugins/contexts.ts";
import { HOOKS, HOOK_NAMES, closestHook, isHookName } from "../../plugins/hooks.ts";
import { appendSections, type PromptContext } from "../../plugins/dialects/sections.ts";
import { serveDialectHook, serveIntercept, serveObserve } from "../../plugins/dialects/serve.ts";
import { decisionsQuery } from "../../plugins/input.ts";
import { installBody } from "../../plugins/install.ts";
import { validate } from "../../validation.ts";
import { hookParams } from "../params.ts";
import type { Reaches } from "../confine.ts";
import { route } from "../route.ts";
import {
  approveAnswer,
  decisionPage,
  generationList,
  hookAnswer,
  installAnswer,
  interceptAnswer,
  observeAnswer,
  pluginList,
  reloadReport,
  removeAnswer,
  switchAnswer,
} from "../../plugins/answers.ts";

/** What the hook route returns for each runtime hook. */
const HOOK_RESULT =
  "The chain's result: `{ cancelled: true, reason, plugin }` when a plugin cancelled, otherwise `{ cancelled: false, value, changedBy, context }` with `value` the hook's mutable field(s) after the chain.";

/** The name of a runtime hook's context schema in the document's components. */
export const hookSchemaName = (hook: string): string => `${hook[0]!.toUpperCase()}${hook.slice(1)}Context`;

/** Any runtime hook's context (the document lists each as a component). */
export const runtimeHookContext = z.union(
  Object.values(RUNTIME_HOOK_CONTEXTS) as unknown as [z.ZodType, z.ZodType, ...z.ZodType[]],
);

/** The value of a hook's mutable field(s) after the chain: one field bare, several as an object. */
function valueOf(hook: keyof typeof HOOKS, context: Record<string, unknown>): unknown {
  const fields = Object.keys(HOOKS[hook].fields);
  if (fields.length === 0) return null;
  if (fields.length === 1) return context[fields[0]!];
  return Object.fromEntries(fields.map((f) => [f, context[f]]));
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

const dialectName = (what: string) =>
  z.object({
    name: z
      .string()
      .min(1)
      .max(200)
      .refine((v) => !v.includes("\u0000"), "contains a NUL character")
      .meta({
        description: what,
      }),
  });

/**
 * A hook's context names the session (and agent) it runs for, and the plugins it reaches read that
 * session (host.session is bound to it): an agent caller may name only its own agents. A session
 * the daemon never stored passes (a runtime need not register its sessions); one stored under
 * another agent is not found. The names are those the dialects take a subject from (runner.ts).
 */
const HOOK_REACHES: Reaches = [
  ...(["sessionId", "senderSessionId", "session_id", "sessionKey", "session_key"] as const).map(
    (name) => ({ session: `body.${name}`, optional: true }) as const,
  ),
  { agent: "body.agentId", optional: true },
  { agent: "body.senderAgentId", optional: true },
];

const generationsQuery = z
  .object({ limit: z.coerce.number().int().min(1).max(500).default(20).describe("At most this many records.") })
  .strict();

const pluginName = z.object({ name: z.string().min(1).max(64).meta({ description: "The plugin's name." }) });

const approveBody = z
  .object({
    dryRun: z.boolean().default(false).describe("Answer what would be approved; record nothing."),
    digest: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/, "a digest as a dry run answers it: sha256:<64 hex digits>")
      .optional()
      .describe("The digest the operator reviewed (from a dry run): refused if the folder changed since."),
  })
  .strict();

/** Loaded plugins, their decision log, and the chains an agent runtime runs itself. */
export const pluginRoutes = [
  route({
    method: "GET",
    url: "/v1/plugins",
    scope: "operator",
    tag: "plugins",
    summary: "Loaded plugins, their hooks and state",
    ok: { 200: { description: "`{ plugins }`", schema: pluginList } },
    handler: async ({ services }) => ({ plugins: services.plugins.list() }),
  }),
  route({
    method: "POST",
    url: "/v1/plugins/reload",
    tag: "plugins",
    scope: "operator",
    summary: "Load the plugin folders anew and swap the whole chain (as SIGHUP does)",
    description:
      "Chains already running finish on the previous set; every chain started afterwards runs on the new one. A plugin that fails to load is listed under `failed` (and in GET /v1/plugins) and the others load. Decisions record the `generation` that made them.",
    ok: {
      200: {
        description:
          "`{ generation, loaded: [{ name, version, order, position, hooks }], failed: [{ name, dir, error }], warnings, hookErrors }`",
        schema: reloadReport,
      },
    },
    handler: async ({ services }) => services.reload(),
  }),
  route({
    method: "POST",
    url: "/v1/plugins/install",
    tag: "plugins",
    scope: "operator",
    summary: "Validate a plugin folder and write it to the first plugin directory the daemon can write to",
    description:
      "The body carries the folder's files (the CLI reads them where it runs, so the daemon needs no access to that path). The folder is validated as a load would (manifest, entry file, grants, hook names) before anything is written; `dryRun` answers what would be installed, with its grants. The plugin is active after the next reload.",
    body: installBody,
    ok: {
      200: {
        description: "`{ name, version, description, kind, hooks, grants, dir, exists, installed, warnings }`",
        schema: installAnswer,
      },
    },
    errors: [409],
    handler: async ({ services, body, actor }) => services.plugins.install(body, actor),
  }),
  route({
    method: "POST",
    url: "/v1/plugins/:name/approve",
    tag: "plugins",
    scope: "operator",
    summary: "Approve what a plugin's folder asks for now: its grants and digest; then reload",
    description:
      "A plugin whose manifest asks for more than was approved runs with the approved grants only, and one that changed under `[plugins] approve_changes` does not load, until it is approved here. `dryRun` answers what would be approved (the grants asked for, what goes beyond the previous approval, the digest) and records nothing; otherwise the approval is recorded with who gave it and the plugins are reloaded. Passing the `digest` a dry run answered refuses (409) a folder that changed since it was reviewed.",
    params: pluginName,
    body: approveBody,
    ok: {
      200: {
        description:
          "`{ name, dir, grants, digest, previous, added, changed, pending, approved, reload }` (`reload` absent on a dry run)",
        schema: approveAnswer,
      },
    },
    errors: [404, 409],
    handler: async ({ services, params: { name }, body, actor }) => {
      const answer = await services.plugins.approve(name, actor, body);
      return body.dryRun ? answer : { ...answer, reload: await services.reload() };
    },
  }),
  ...(["disable", "enable"] as const).map((verb) =>
    route({
      method: "POST",
      url: `/v1/plugins/:name/${verb}`,
      tag: "plugins",
      scope: "operator",
      summary:
        verb === "disable"
          ? "Disable a plugin: out of the chain (even a required one) until enabled; then reload"
          : "Enable a disabled plugin; then reload",
      description:
        "Kept in the database, so it holds across reloads and restarts. A disabled plugin is listed with state `disabled` and is not loaded; `missiond doctor` notes it. Answers 404 for a name no plugin folder has, 409 when it already is so.",
      params: pluginName,
      ok: { 200: { description: "`{ name, state, reload }`", schema: switchAnswer } },
      errors: [404, 409],
      handler: async ({ services, params: { name }, actor }) => {
        await services.plugins.setEnabled(name, verb === "enable", actor);
        return { name, state: `${verb}d` as const, reload: await services.reload() };
      },
    }),
  ),
  route({
    method: "DELETE",
    url: "/v1/plugins/:name",
    tag: "plugins",
    scope: "operator",
    summary: "Remove a plugin: delete its folder and its approvals; then reload",
    description:
      "Its host.store keys are kept (a reinstall under the same name finds them). Answers 404 for a name no plugin folder has, and 409 when the daemon cannot write the plugin's directory or the plugin is a configured plugin directory itself.",
    params: pluginName,
    ok: { 200: { description: "`{ name, dir, approvalsRemoved, reload }`", schema: removeAnswer } },
    errors: [404, 409],
    handler: async ({ services, params: { name } }) => {
      const removed = await services.plugins.remove(name);
      return { ...removed, reload: await services.reload() };
    },
  }),
  route({
    method: "GET",
    url: "/v1/plugin-generations",
    scope: "operator",
    tag: "plugins",
    summary: "The decision log's generation records, newest first",
    description:
      "One record per load of the plugin set (the start, each reload): per plugin its state, the grants it ran with, its digest, its approval (revision, source, actor) and whether it needed approval. Decisions name their `generation`.",
    query: generationsQuery,
    ok: { 200: { description: "`{ generations: [{ instance, generation, at, plugins }] }`", schema: generationList } },
    handler: async ({ services, query }) => ({ generations: await services.plugins.generations(query.limit) }),
  }),
  route({
    method: "GET",
    url: "/v1/hook-decisions",
    scope: "operator",
    tag: "plugins",
    summary: "The decision log: what each handler did, newest first",
    query: decisionsQuery,
    ok: { 200: { description: "`{ decisions, counts }`", schema: decisionPage } },
    handler: async ({ services, query }) => services.plugins.decisionPage(query),
  }),
  // An agent runtime runs the account's chain for the hooks the daemon does not fire itself.
  route({
    method: "POST",
    url: "/v1/hooks/:hook",
    scope: "agent",
    reaches: HOOK_REACHES,
    tag: "plugins",
    summary: "Run the chain of a hook the daemon does not fire itself",
    description: `Plugins written for the other hook systems are served here too: the gateway hooks (prePrompt, postResponse, preToolExec, postToolExec, modelSwitched) answer in their own shapes, a snake_case name (pre_tool_call, pre_llm_call, …) runs the Python plugins' callbacks with the body as keyword arguments (pre_gateway_dispatch and transform_api_error_classification answer the first deciding callback's answer, with its plugin), and an event name (agent:step, command:reset) the event hooks listening to it; systemPrompt's answer has the Python plugins' system prompt sections appended after the contract's chain. For the contract's hooks, the body is the hook's context, exactly as the contract gives it: ${Object.keys(
      RUNTIME_HOOK_CONTEXTS,
    )
      .map((h) => `\`${h}\` takes \`${hookSchemaName(h)}\``)
      .join(", ")}. An unknown hook answers 404; a hook the daemon fires itself answers 400.`,
    params: hookParams,
    body: runtimeHookContext,
    bodyCheckedByHandler: true,
    hop: true,
    ok: { 200: { description: HOOK_RESULT, schema: hookAnswer } },
    handler: async ({ services, params: { hook }, body, hop }) => {
      if (!isHookName(hook)) {
        const dialect = isObject(body) ? await serveDialectHook(services.plugins.dialects, hook, body) : null;
        if (dialect) return dialect;
        throw new MissiondError(
          "NOT_FOUND",
          closestHook(hook)
            ? `unknown hook "${hook}"; did you mean ${closestHook(hook)}?`
            : `unknown hook "${hook}"; hooks are ${HOOK_NAMES.join(", ")}`,
        );
      }
      if (!isRuntimeHook(hook))
        throw new MissiondError("BAD_REQUEST", `${hook} is fired by the daemon itself, not over the API`);
      const context = validate(RUNTIME_HOOK_CONTEXTS[hook], body, "body") as Record<string, unknown>;
      // The per-command SSH hooks name only the server's id: host.ssh finds it from here.
      if (hook === "sshConnectionOpening") {
        const { sshHostId, hostname, port, username, connectionType } = context as z.infer<
          (typeof RUNTIME_HOOK_CONTEXTS)["sshConnectionOpening"]
        >;
        services.plugins.sshTargets.remember(sshHostId, { hostname, port, username, connectionType });
      }
      const result = await services.plugins.chain.run(hook, context, { hop });
      if (result.kind === "cancelled") return { cancelled: true, reason: result.reason, plugin: result.plugin };
      // Only cronJobFiring accepts a defer, and it is not a runtime hook: interpret() rejects it.
      if (result.kind === "deferred") throw new MissiondError("INTERNAL", `${hook} cannot be deferred`);
      let final = result.context as Record<string, unknown>;
      let changedBy = [...result.changedBy];
      // The Python plugins' system prompt sections go after what the contract's chain answered.
      if (hook === "systemPrompt") {
        const added = await appendSections(services.plugins.dialects, final as unknown as PromptContext);
        final = { ...final, systemPrompt: added.systemPrompt };
        changedBy = [...changedBy, ...added.changedBy.filter((name) => !changedBy.includes(name))];
      }
      return { cancelled: false, value: valueOf(hook, final), changedBy, context: final };
    },
  }),
  route({
    method: "POST",
    url: "/v1/intercept/:name",
    scope: "agent",
    reaches: [{ session: "body.input.sessionId", optional: true }],
    tag: "plugins",
    summary: "Run the extensions' intercept chain of one name",
    description:
      "The body is `{ input, current }`; the answer `{ result, endedBy }`, with `endedBy` the extension whose result ended the chain (`{ block }` or `{ result }` for tool.call, `{ handled: true }` for prompt), or null.",
    params: dialectName("The interceptor's name: tool.call, tool.result, prompt, retry, title, tracing.redact, …"),
    body: z.object({ input: z.record(z.string(), z.unknown()).optional(), current: z.unknown().optional() }).strict(),
    ok: { 200: { description: "`{ result, endedBy }`", schema: interceptAnswer } },
    handler: async ({ services, params: { name }, body }) =>
      serveIntercept(services.plugins.dialects, name, body as Record<string, unknown>),
  }),
  route({
    method: "POST",
    url: "/v1/observe/:name",
    scope: "agent",
    reaches: [{ session: "body.sessionId", optional: true }],
    tag: "plugins",
    summary: "Hand an event to the extensions' observers (answered at once)",
    params: dialectName("The event's name, e.g. tool:after or run:settled."),
    // sessionId is what an observer's { sessionId } filter compares with.
    body: z.object({ sessionId: z.string().min(1).max(200).optional() }).catchall(z.unknown()),
    ok: { 200: { description: "`{ extensions }`: how many extensions were handed the event", schema: observeAnswer } },
    handler: async ({ services, params: { name }, body }) => serveObserve(services.plugins.dialects, name, body),
  }),
];
