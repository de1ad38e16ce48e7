import type { FastifyInstance } from "fastify";
import type { SessionService } from "../../sessions/service.ts";

const idOf = (params: unknown) => (params as { id: string }).id;

export function sessionRoutes(app: FastifyInstance, sessions: SessionService): void {
  app.post("/v1/sessions", async (request, reply) => reply.status(201).send(await sessions.create(request.body)));
  app.get("/v1/sessions", async () => ({ sessions: await sessions.list() }));
  app.get("/v1/sessions/:id", async (request) => sessions.get(idOf(request.params)));
  app.post("/v1/sessions/:id/messages", async (request, reply) => reply.status(201).send(await sessions.append(idOf(request.params), request.body)));
  app.get("/v1/sessions/:id/messages", async (request) => ({ messages: await sessions.messages(idOf(request.params), request.query) }));
  app.post("/v1/sessions/:id/subagents", async (request, reply) => {
    await sessions.addSubagent(idOf(request.params), request.body);
    return reply.status(204).send();
  });
  app.post("/v1/sessions/:id/peer-threads", async (request, reply) => {
    await sessions.addPeerThread(idOf(request.params), request.body);
    return reply.status(204).send();
  });
}
