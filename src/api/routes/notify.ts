import type { FastifyInstance } from "fastify";
import type { NotifyService } from "../../notify/service.ts";
import { hopOf } from "../hop.ts";

const idOf = (params: unknown) => (params as { id: string }).id;

export function notifyRoutes(app: FastifyInstance, notify: NotifyService): void {
  // 201 with the timer whatever notifyScheduled decided: a Cancelled timer is a recorded outcome.
  app.post("/v1/notify", async (request, reply) =>
    reply.status(201).send(await notify.schedule(request.body, { hop: hopOf(request) })),
  );
  app.get("/v1/notify", async (request) => ({ timers: await notify.list(request.query) }));
  app.get("/v1/notify/:id", async (request) => notify.get(idOf(request.params)));
  app.post("/v1/notify/:id/cancel", async (request) => notify.cancel(idOf(request.params)));
}
