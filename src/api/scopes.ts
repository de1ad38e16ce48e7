// The API's scopes, free of Node and fastify imports so the dashboard and the config schema can
// load them. What each scope reaches is described in caller.ts.

export const SCOPES = ["public", "agent", "operator"] as const;
export type Scope = (typeof SCOPES)[number];
/** A caller's scope (`public` is what a route may need, never what a caller holds). */
export type CallerScope = Exclude<Scope, "public">;
export const CALLER_SCOPES = ["agent", "operator"] as const satisfies readonly CallerScope[];
