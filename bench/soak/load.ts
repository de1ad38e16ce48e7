/**
 * The steady flow beside the cron jobs, through the API as a runtime would send it: notify timers
 * due seconds later, todo batches closed soon after, transcript messages, and session clears, over
 * a fixed pool of sessions (sessions themselves are not history: retention keeps them).
 */
import type { ApiClient } from "../../src/cli/client.ts";

export interface FlowRates {
  /** Per second. */
  timers: number;
  todos: number;
  messages: number;
  clears: number;
}

export interface Flow {
  sent: Record<keyof FlowRates | "todosClosed", number>;
  errors: number;
  lastError: string | null;
  stop(): Promise<void>;
}

const SESSIONS = 20;
const TICK_MS = 200;

export async function startFlow(api: ApiClient, rates: FlowRates): Promise<Flow> {
  const sessions = Array.from({ length: SESSIONS }, (_, i) => `soak-session-${i}`);
  for (const id of sessions) await api.post("/v1/sessions", { id, agentId: "soak" });
  const sent = { timers: 0, todos: 0, messages: 0, clears: 0, todosClosed: 0 };
  const flow: Flow = { sent, errors: 0, lastError: null, stop: async () => {} };
  const owed = { timers: 0, todos: 0, messages: 0, clears: 0 };
  const inFlight = new Set<Promise<unknown>>();
  let toClose: string[] = [];
  let n = 0;
  const session = () => sessions[n++ % SESSIONS]!;
  const send = (kind: keyof typeof sent, call: () => Promise<unknown>) => {
    const p = call()
      .then(() => sent[kind]++)
      .catch((err: Error) => {
        flow.errors++;
        flow.lastError = `${kind}: ${err.message}`;
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  const tick = () => {
    // Todos added on the previous tick are closed now: open todos are never pruned, closed ones are.
    for (const id of toClose) send("todosClosed", () => api.post(`/v1/todos/${id}/done`, {}));
    toClose = [];
    for (const kind of Object.keys(owed) as (keyof FlowRates)[]) owed[kind] += (rates[kind] * TICK_MS) / 1000;
    for (; owed.timers >= 1; owed.timers--)
      send("timers", () =>
        api.post("/v1/notify", {
          sessionId: session(),
          message: "soak: time to look again",
          delaySeconds: 1 + Math.floor(Math.random() * 30),
        }),
      );
    for (; owed.todos >= 1; owed.todos--)
      send("todos", async () => {
        const added = await api.post<{ todos: { id: string }[] }>(`/v1/sessions/${session()}/todos`, {
          texts: ["soak: read the report", "soak: answer the thread"],
        });
        toClose.push(...added.todos.map((t) => t.id));
      });
    for (; owed.messages >= 1; owed.messages--)
      send("messages", () =>
        api.post(`/v1/sessions/${session()}/messages`, {
          messages: [{ role: "user", text: "soak: a message the next clear deletes" }],
        }),
      );
    for (; owed.clears >= 1; owed.clears--)
      send("clears", () => api.post(`/v1/sessions/${session()}/clear`, { trailingText: "soak: start over" }));
  };
  const timer = setInterval(tick, TICK_MS);
  flow.stop = async () => {
    clearInterval(timer);
    await Promise.all([...inFlight]);
  };
  return flow;
}
