import { observe } from "./extensions.ts";
import type { Removed } from "../../sessions/removal.ts";
import type { DialectRunner } from "./runner.ts";

/** The daemon's own moments that the other hook systems hear, each under its own names. */
export type DaemonMoment =
  | { readonly moment: "started" }
  | { readonly moment: "stopping" }
  | { readonly moment: "sessionCreated"; readonly sessionId: string; readonly agentId: string }
  | { readonly moment: "sessionCleared"; readonly sessionId: string; readonly agentId: string | null }
  | ({ readonly moment: "sessionRemoved" } & Removed)
  | { readonly moment: "cronRunSettled"; readonly data: Record<string, unknown> }
  | { readonly moment: "notifyDelivered"; readonly data: Record<string, unknown> };

export const PLATFORM = "missiond";

/** The names each hook system gives the daemon's moments (documented in the table of docs/hook-systems.md). */
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
  // The event-hook page shows no event for a session that ends for good: missiond names it session:end.
  sessionRemoved: {
    gateway: "sessionDisposed",
    event: "session:end",
    python: "on_session_end",
    extension: "session:removed",
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
  const session = "sessionId" in m ? { sessionId: m.sessionId, agentId: m.agentId } : null;
  const data = "data" in m ? m.data : m.moment === "sessionRemoved" ? removedData(m) : (session ?? {});
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
    if (m.moment === "sessionRemoved") Object.assign(kwargs, endOfRemoved(m));
    await runner.python(names.python, kwargs);
  }
}

const removedData = (m: Removed) => ({
  sessionId: m.sessionId,
  agentId: m.agentId,
  forced: m.forced,
  cancelledTimers: m.cancelledTimers,
  cancelledTodos: m.cancelledTodos,
});

/**
 * on_session_end for a removal: the session is over (completed) unless the removal cancelled
 * work still bound to it (forced over pending timers or open todos), which is an interruption.
 */
function endOfRemoved(m: Removed): Record<string, unknown> {
  const interrupted = m.cancelledTimers.length > 0 || m.cancelledTodos.length > 0;
  return { completed: !interrupted, interrupted, reason: "removed" };
}
