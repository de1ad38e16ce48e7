import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { ZodError } from "zod";
import { databaseUnavailable } from "../db/errors.ts";
import { isMissiondError, type ErrorCode } from "../errors.ts";
import { describeIssues } from "../validation.ts";

export interface ErrorBody {
  error: { code: ErrorCode | string; message: string; [detail: string]: string };
}

/** Every error leaves the API as `{ error: { code, message } }` with a matching status. */
export function errorHandler(err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): void {
  const send = (status: number, code: string, message: string) =>
    void reply.status(status).send({ error: { code, message } } satisfies ErrorBody);
  if (err instanceof ZodError) return send(400, "BAD_REQUEST", describeIssues(err));
  if (isMissiondError(err)) {
    return void reply
      .status(err.status)
      .send({ error: { ...err.details, code: err.code, message: err.message } } satisfies ErrorBody);
  }
  const fastifyError = err as FastifyError;
  if (fastifyError.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    const given = request.headers["content-type"];
    return send(
      415,
      "BAD_REQUEST",
      `${given ? `content type "${given}" is` : "a body without a content type is"} not supported; send application/json`,
    );
  }
  if (fastifyError.code === "FST_ERR_CTP_BODY_TOO_LARGE")
    return send(
      413,
      "PAYLOAD_TOO_LARGE",
      `request body is larger than the limit of ${request.routeOptions.bodyLimit ?? "?"} bytes`,
    );
  if (fastifyError.statusCode && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return send(fastifyError.statusCode, "BAD_REQUEST", fastifyError.message);
  }
  // The database is read-only, out of disk, restarting or unreachable: a condition to name (and
  // retry after), not a bug to hide behind "internal error".
  const unavailable = databaseUnavailable(err);
  if (unavailable) {
    request.log.warn({ err }, `request failed: ${unavailable}`);
    return send(503, "DATABASE", unavailable);
  }
  request.log.error({ err }, "request failed");
  send(500, "INTERNAL", "internal error; see the daemon's log");
}
