import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { validate } from "../../validation.ts";
import type { ClearService } from "../../sessions/clears.ts";
import type { SessionService } from "../../sessions/service.ts";

// validate() refuses a NUL character (Postgres text cannot hold one) before the id reaches a query.
const idParams = z.object({ id: z.string() });
const idOf = (params: unknown) => validate(idParams, params, "params").id;

/** Open todos per session (the todos domain answers; sessions without any are absent). */
export type OpenTodoCounts = (sessionIds: readonly string[]) => Promise<Map<string, number>>;

export function sessionRoutes(
  app: FastifyInstance,
  sessions: SessionService,
  clears: ClearService,
  openTodos: OpenTodoCounts,
): void {
  app.post("/v1/sessions", async (request, reply) => reply.status(201).send(await sessions.create(request.body)));
  app.get("/v1/sessions", async () => {
    const list = await sessions.list();
    const open = await openTodos(list.map((s) => s.id));
    return { sessions: list.map((s) => ({ ...s, openTodos: open.get(s.id) ?? 0 })) };
  });
  app.get("/v1/sessions/:id", async (request) => sessions.get(idOf(request.params)));
  app.post("/v1/sessions/:id/messages", async (request, reply) =>
    reply.status(201).send(await sessions.append(idOf(request.params), request.body)),
  );
  app.get("/v1/sessions/:id/messages", async (request) => ({
    messages: await sessions.messages(idOf(request.params), request.query),
  }));
  app.post("/v1/sessions/:id/subagents", async (request, reply) => {
    await sessions.addSubagent(idOf(request.params), request.body);
    return reply.status(204).send();
  });
  app.post("/v1/sessions/:id/peer-threads", async (request, reply) => {
    await sessions.addPeerThread(idOf(request.params), request.body);
    return reply.status(204).send();
  });
  // `/new`: answers once the transcript is deleted (200 when it joined a clear already under way).
  app.post("/v1/sessions/:id/clear", async (request, reply) => {
    const { clear, joined } = await clears.request(idOf(request.params), request.body ?? {});
    return reply.status(joined ? 200 : 201).send(clear);
  });
  app.get("/v1/session-clears/:id", async (request) => clears.get(idOf(request.params)));
  app.get("/v1/events", async (request) => sessions.events(request.query));
}
