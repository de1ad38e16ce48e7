import { z } from "zod";

/** `[tracing]`: where run spans go (OTLP over HTTP, JSON). Absent endpoint: no spans, no exporter. */
export const tracingSchema = z
  .object({
    // The collector's traces URL, e.g. http://127.0.0.1:4318/v1/traces.
    otlp_endpoint: z.url({ protocol: /^https?$/ }).optional(),
    // The `service.name` resource of every span.
    service_name: z.string().min(1).max(200).default("missiond"),
  })
  .strict()
  .prefault({});

export interface TracingConfig {
  /** Null: tracing is off (the traceparent header is still sent to agents). */
  readonly otlpEndpoint: string | null;
  readonly serviceName: string;
}

export function compileTracing(raw: z.output<typeof tracingSchema>): TracingConfig {
  return Object.freeze({ otlpEndpoint: raw.otlp_endpoint ?? null, serviceName: raw.service_name });
}
