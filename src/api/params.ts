import { z } from "zod";
import { agentIdPattern } from "../executors/agents.ts";
import { RUNTIME_HOOK_CONTEXTS } from "../plugins/contexts.ts";

/**
 * The path parameters of every route, one schema per kind of id. A path that names nothing
 * answers 404 like an unknown object, never 400: so these schemas let any string through (the
 * service answers "no X with id …", parseId in validation.ts for 64-bit ids), and state what a
 * well-formed id looks like in the document only (`.meta` is merged into the JSON Schema).
 */

/** A 64-bit id (cron job, run, notify timer, todo, session clear) as a decimal string. */
export const idParams = (what: string) =>
  z.object({
    id: z.string().meta({
      description: `The ${what}'s id: a 64-bit integer as a decimal string. One that is malformed or does not fit int8 answers 404, like an unknown one.`,
      pattern: "^\\d{1,19}$",
    }),
  });

const noNul = (value: string) => !value.includes("\u0000");

/** A session's id, as its creator gave it. Postgres text cannot hold a NUL character: that one is a 400. */
export const sessionParams = z.object({
  id: z
    .string()
    .refine(noNul, "contains a NUL character")
    .meta({ description: "The session's id (as given when the session was created).", minLength: 1, maxLength: 200 }),
});

/** An agent's id; the service refuses a malformed one (400 to set, 404 to remove). */
export const agentParams = z.object({
  id: z.string().meta({
    description: "The agent's id: letters, digits, '.', '_', ':' or '-'.",
    pattern: agentIdPattern.source,
  }),
});

/** A runtime hook's name; the handler answers 404 for an unknown hook, 400 for one the daemon fires. */
export const hookParams = z.object({
  hook: z.string().meta({ description: "One of the runtime hooks.", enum: Object.keys(RUNTIME_HOOK_CONTEXTS) }),
});
