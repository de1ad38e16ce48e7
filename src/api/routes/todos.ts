import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { validate } from "../../validation.ts";
import type { TodoService } from "../../todos/service.ts";
import { hopOf } from "../hop.ts";

// validate() refuses a NUL character (Postgres text cannot hold one) before the id reaches a query.
const idParams = z.object({ id: z.string() });
const idOf = (params: unknown) => validate(idParams, params, "params").id;

export function todoRoutes(app: FastifyInstance, todos: TodoService): void {
  app.post("/v1/sessions/:id/todos", async (request, reply) =>
    reply.status(201).send(await todos.add(idOf(request.params), request.body, { hop: hopOf(request) })),
  );
  app.get("/v1/sessions/:id/todos", async (request) => ({
    todos: await todos.list(idOf(request.params), request.query),
  }));
  app.post("/v1/todos/:id/done", async (request) => todos.done(idOf(request.params)));
  app.post("/v1/todos/:id/cancel", async (request) => todos.cancel(idOf(request.params)));
}
