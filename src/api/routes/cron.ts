import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { jobRunsQuery, previewQuery, runsQuery, type AddJobInput } from "../../cron/input.ts";
import type { CronService } from "../../cron/service.ts";
import { validate } from "../../validation.ts";

const idParams = z.object({ id: z.string() });

export function cronRoutes(app: FastifyInstance, cron: CronService): void {
  app.post("/v1/cron-jobs", async (request, reply) => {
    // The service validates (it is the same check for every caller); errors name the field.
    const job = await cron.add(request.body as AddJobInput);
    return reply.status(201).send(job);
  });
  app.get("/v1/cron-jobs", async (request) => cron.page(request.query));
  app.get("/v1/cron-jobs/:id", async (request) => cron.get(validate(idParams, request.params, "params").id));
  app.delete("/v1/cron-jobs/:id", async (request, reply) => {
    await cron.remove(validate(idParams, request.params, "params").id);
    return reply.status(204).send();
  });
  app.post("/v1/cron-jobs/:id/pause", async (request) =>
    cron.pause(validate(idParams, request.params, "params").id, request.body ?? {}),
  );
  app.post("/v1/cron-jobs/:id/resume", async (request) => cron.resume(validate(idParams, request.params, "params").id));
  app.post("/v1/cron-jobs/:id/trigger", async (request, reply) =>
    reply.status(201).send(await cron.trigger(validate(idParams, request.params, "params").id)),
  );
  app.get("/v1/cron-jobs/:id/runs", async (request) => {
    const { id } = validate(idParams, request.params, "params");
    const query = validate(jobRunsQuery, request.query, "query");
    return { runs: await cron.runs({ ...query, jobId: id }) };
  });
  app.get("/v1/runs", async (request) => ({ runs: await cron.runs(validate(runsQuery, request.query, "query")) }));
  app.get("/v1/run-timeline", async (request) => cron.timeline(request.query));
  app.get("/v1/cron-preview", async (request) => ({
    fireTimes: cron.preview(validate(previewQuery, request.query, "query")),
  }));
}
