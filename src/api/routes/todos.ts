import type { FastifyInstance } from "fastify";
import type { TodoService } from "../../todos/service.ts";
import { hopOf } from "../hop.ts";

const idOf = (params: unknown) => (params as { id: string }).id;

export function todoRoutes(app: FastifyInstance, todos: TodoService): void {
  app.post("/v1/sessions/:id/todos", async (request, reply) => reply.status(201).send(await todos.add(idOf(request.params), request.body, { hop: hopOf(request) })));
  app.get("/v1/sessions/:id/todos", async (request) => ({ todos: await todos.list(idOf(request.params), request.query) }));
  app.post("/v1/todos/:id/done", async (request) => todos.done(idOf(request.params)));
  app.post("/v1/todos/:id/cancel", async (request) => todos.cancel(idOf(request.params)));
}
