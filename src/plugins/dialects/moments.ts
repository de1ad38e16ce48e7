import { observe } from "./extensions.ts";
import type { DialectRunner } from "./runner.ts";

/** The daemon's own moments that the other hook systems hear, each under its own names. */
export type DaemonMoment =
  | { readonly moment: "started" }
  | { readonly moment: "stopping" }
  | { readonly moment: "sessionCreated"; readonly sessionId: string; readonly agentId: string }
  | { readonly moment: "sessionCleared"; readonly sessionId: string; readonly agentId: string | null }
  | { readonly moment: "cronRunSettled"; readonly data: Record<string, unknown> }
  | { readonly moment: "notifyDelivered"; readonly data: Record<string, unknown> };

export const PLATFORM = "missiond";

/** The names each hook system gives the daemon's moments (documented in the README's table). */
export const MOMENT_NAMES = {
  started: { gateway: "gatewayStarted", event: "gateway:startup", python: null, extension: "daemon:started" },
  stopping: { gateway: "gatewayShutdown", event: null, python: null, extension: "daemon:stopping" },
  sessionCreated: {
    gateway: "sessionCreated",
    event: "session:start",
    python: "on_session_start",
    extension: "session:created",
  },
  sessionCleared: {
    gateway: "sessionDisposed",
    event: "session:reset",
    python: "on_session_end",
    extension: "session:cleared",
  },
  cronRunSettled: { gateway: null, event: null, python: null, extension: "cron:settled" },
  notifyDelivered: { gateway: null, event: null, python: null, extension: "notify:delivered" },
} as const;

/**
 * Tells every hook system about one of the daemon's moments, in the documented sequence: gateway
 * plugins, then event hooks, then Python plugins (each awaited in turn), while extension observers
 * run on their own. Resolves when the awaited ones are done.
 */
export async function announce(runner: DialectRunner, m: DaemonMoment): Promise<void> {
  const names = MOMENT_NAMES[m.moment];
  const session =
    m.moment === "sessionCreated" || m.moment === "sessionCleared"
      ? { sessionId: m.sessionId, agentId: m.agentId }
      : null;
  const data = "data" in m ? m.data : (session ?? {});
  if (names.extension) observe(runner, names.extension, data);
  if (names.gateway) {
    const event = session ? { sessionKey: session.sessionId, agentName: session.agentId, channel: PLATFORM } : {};
    await runner.gateway(names.gateway, event);
  }
  if (names.event) {
    const context = session
      ? { session_id: session.sessionId, agent: session.agentId, platform: PLATFORM }
      : { platform: PLATFORM };
    await runner.eventHooks(names.event, context);
  }
  if (names.python && session) {
    const kwargs: Record<string, unknown> = { session_id: session.sessionId, model: null, platform: PLATFORM };
    if (m.moment === "sessionCleared") Object.assign(kwargs, { completed: true, interrupted: false });
    await runner.python(names.python, kwargs);
  }
}
