import { FAILED_RUN_STATUSES } from "../db/schema/enums.ts";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  RandomIdGenerator,
  type IdGenerator,
} from "@opentelemetry/sdk-trace-base";
import { runAt } from "../cron/event-queries.ts";
import type { Db } from "../db/client.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import type { CronMission } from "../executors/types.ts";
import type { Logger } from "../log.ts";
import { VERSION } from "../version.ts";
import type { TracingConfig } from "./config.ts";
import { runTraceIds, type RunTraceIds } from "./trace-context.ts";

// Spans wait this long in the batch before they are sent (the SDK's default is 5 s).
const EXPORT_DELAY_MS = 1_000;
const FAILED = new Set<string>(FAILED_RUN_STATUSES);

/**
 * The run span takes the ids its traceparent announced (trace-context.ts); every other span gets
 * random ones. startSpan asks for the span id first, then (for a root) the trace id.
 */
class RunIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  next: RunTraceIds | null = null;
  generateSpanId(): string {
    const id = this.next?.spanId;
    return id ?? this.random.generateSpanId();
  }
  generateTraceId(): string {
    const id = this.next?.traceId;
    this.next = null;
    return id ?? this.random.generateTraceId();
  }
}

/**
 * One span per closed run, exported through the OpenTelemetry SDK to `[tracing] otlp_endpoint`:
 * the run (claim to close) with a `claimed` event, and two children, `chain` (claim or moment to
 * hand-off) and `delivery` (hand-off to close, the agent's call and its retries). Built when the run
 * closes, from the ledger's own times, so a run handed between instances is still one span. A run
 * that ends without a mission (Skipped, or Cancelled or Deferred by a plugin) is one span too,
 * with its reason and no delivery (`unsent`).
 */
export class RunTracer {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly ids = new RunIds();
  private readonly db: Db;
  private readonly log: Logger;

  constructor(config: TracingConfig & { otlpEndpoint: string }, db: Db, log: Logger) {
    this.db = db;
    this.log = log.child({ component: "tracing" });
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ "service.name": config.serviceName, "service.version": VERSION }),
      idGenerator: this.ids,
      spanProcessors: [
        new BatchSpanProcessor(new OTLPTraceExporter({ url: config.otlpEndpoint }), {
          scheduledDelayMillis: EXPORT_DELAY_MS,
        }),
      ],
    });
    this.tracer = this.provider.getTracer("missiond", VERSION);
  }

  /** The run of `mission` closed: reads it back and records its spans (detached from the close). */
  closed(mission: CronMission): void {
    runAt(this.db, BigInt(mission.runId), new Date(mission.scheduledFor)).then(
      (run) => run && this.record(run, mission),
      (err: unknown) => this.log.warn({ err, runId: mission.runId }, "run span not recorded"),
    );
  }

  /**
   * A run that ended without a mission (Skipped at its claim, Cancelled or Deferred by a plugin):
   * its span, with its status and reason, and no delivery child; a `chain` child when a plugin
   * decided (the chain ran from the claim or moment to the decision).
   */
  unsent(job: Pick<CronJobRow, "id" | "name" | "agentId">, run: CronJobRunRow): void {
    try {
      const end = run.finishedAt ?? run.claimedAt;
      const span = this.runSpan(run, { cronJobId: String(job.id), jobName: job.name, agentId: job.agentId });
      span.setAttribute("missiond.run.reason", run.reason ?? "");
      if (run.decidedBy) {
        span.setAttribute("missiond.run.decided_by", run.decidedBy);
        const chainStart = new Date(
          Math.min(end.getTime(), Math.max(run.claimedAt.getTime(), run.scheduledFor.getTime())),
        );
        this.tracer.startSpan("chain", { startTime: chainStart }, trace.setSpan(ROOT_CONTEXT, span)).end(end);
      }
      span.end(end);
    } catch (err) {
      this.log.warn({ err, runId: String(run.id) }, "run span not recorded");
    }
  }

  /** The run's root span, under the ids its traceparent announced, with its `claimed` event. */
  private runSpan(run: CronJobRunRow, job: Pick<CronMission, "cronJobId" | "jobName" | "agentId">): Span {
    this.ids.next = runTraceIds(String(run.id), run.scheduledFor.toISOString());
    const span = this.tracer.startSpan(`run ${job.jobName}`, {
      root: true,
      startTime: run.claimedAt,
      attributes: {
        "missiond.run.id": String(run.id),
        "missiond.run.trigger": run.trigger,
        "missiond.run.status": run.status,
        "missiond.run.scheduled_for": run.scheduledFor.toISOString(),
        "missiond.run.attempts": run.attempts,
        "missiond.job.id": job.cronJobId,
        "missiond.job.name": job.jobName,
        "missiond.agent.id": job.agentId,
      },
    });
    this.ids.next = null;
    span.addEvent("claimed", { "missiond.claimed_by": run.claimedBy }, run.claimedAt);
    return span;
  }

  private record(run: CronJobRunRow, mission: CronMission): void {
    const end = run.finishedAt ?? new Date();
    const handedOff = run.startedAt ?? end;
    const span = this.runSpan(run, mission);
    const parent = trace.setSpan(ROOT_CONTEXT, span);
    const chainStart = new Date(
      Math.min(handedOff.getTime(), Math.max(run.claimedAt.getTime(), run.scheduledFor.getTime())),
    );
    this.tracer.startSpan("chain", { startTime: chainStart }, parent).end(handedOff);
    const delivery = this.tracer.startSpan(
      "delivery",
      { kind: SpanKind.CLIENT, startTime: handedOff, attributes: { "missiond.executor": run.executor ?? "" } },
      parent,
    );
    if (FAILED.has(run.status)) delivery.setStatus({ code: SpanStatusCode.ERROR, message: run.reason ?? run.status });
    delivery.end(end);
    if (FAILED.has(run.status)) span.setStatus({ code: SpanStatusCode.ERROR, message: run.reason ?? run.status });
    span.end(end);
  }

  /** Sends what is batched and stops the exporter (shutdown, after the workers drained). */
  async shutdown(): Promise<void> {
    await this.provider.shutdown().catch((err: unknown) => this.log.warn({ err }, "span export at shutdown failed"));
  }
}

/** The tracer `[tracing]` asks for: null when no endpoint is set (nothing is built, nothing runs). */
export function runTracer(config: TracingConfig, db: Db, log: Logger): RunTracer | null {
  return config.otlpEndpoint === null ? null : new RunTracer({ ...config, otlpEndpoint: config.otlpEndpoint }, db, log);
}
