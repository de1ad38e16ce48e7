import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { DECISION_OUTCOMES } from "../../db/schema/enums.ts";
import { MissiondError } from "../../errors.ts";
import { RUNTIME_HOOK_CONTEXTS, isRuntimeHook } from "../../plugins/contexts.ts";
import { HOOKS, HOOK_NAMES, isHookName } from "../../plugins/hooks.ts";
import { listDecisions } from "../../plugins/queries.ts";
import type { Plugins } from "../../plugins/service.ts";
import type { Db } from "../../db/client.ts";
import { idString, validate } from "../../validation.ts";
import { hopOf } from "../hop.ts";

export const decisionsQuery = z
  .object({
    hook: z.enum(HOOK_NAMES as [string, ...string[]]).optional(),
    plugin: z.string().min(1).max(64).optional(),
    subject: z.string().min(1).max(200).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(50),
    before: idString("decision").optional(),
  })
  .strict();

export function pluginRoutes(app: FastifyInstance, plugins: Plugins, db: Db): void {
  app.get("/v1/plugins", async () => ({ plugins: plugins.list() }));

  app.get("/v1/hook-decisions", async (request) => {
    const query = validate(decisionsQuery, request.query, "query");
    await plugins.flushDecisions();
    const found = await listDecisions(db, {
      hook: query.hook,
      plugin: query.plugin,
      subjectId: query.subject,
      limit: query.limit,
      beforeId: query.before !== undefined ? BigInt(query.before) : undefined,
    });
    const counts: Record<string, number> = Object.fromEntries(DECISION_OUTCOMES.map((o) => [o, 0]));
    for (const d of found) counts[d.outcome] = (counts[d.outcome] ?? 0) + 1;
    return {
      decisions: found.map((d) => ({
        id: String(d.id),
        plugin: d.plugin,
        hook: d.hook,
        subjectId: d.subjectId,
        at: d.at.toISOString(),
        durationMs: d.durationMs,
        outcome: d.outcome,
        fields: d.fields,
        reason: d.reason,
        shadow: d.shadow,
        instance: d.instance,
      })),
      counts,
    };
  });

  // An agent runtime runs the account's chain for the hooks the daemon does not fire itself.
  app.post("/v1/hooks/:hook", async (request) => {
    const { hook } = request.params as { hook: string };
    if (!isHookName(hook))
      throw new MissiondError("NOT_FOUND", `unknown hook "${hook}"; hooks are ${HOOK_NAMES.join(", ")}`);
    if (!isRuntimeHook(hook))
      throw new MissiondError("BAD_REQUEST", `${hook} is fired by the daemon itself, not over the API`);
    const context = validate(RUNTIME_HOOK_CONTEXTS[hook], request.body, "body") as Record<string, unknown>;
    const result = await plugins.chain.run(hook, context, { hop: hopOf(request) });
    if (result.kind === "cancelled") return { cancelled: true, reason: result.reason, plugin: result.plugin };
    // Only cronJobFiring accepts a defer, and it is not a runtime hook: interpret() rejects it.
    if (result.kind === "deferred") throw new MissiondError("INTERNAL", `${hook} cannot be deferred`);
    const fields = Object.keys(HOOKS[hook].fields);
    const final = result.context as Record<string, unknown>;
    const value =
      fields.length === 0
        ? null
        : fields.length === 1
          ? final[fields[0]!]
          : Object.fromEntries(fields.map((f) => [f, final[f]]));
    return { cancelled: false, value, changedBy: result.changedBy, context: final };
  });
}
