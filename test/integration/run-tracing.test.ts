import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { fixturePlugin } from "../helpers/plugins.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * Tracing through a real daemon: the webhook agent's request carries a W3C traceparent and the run
 * id, and with `[tracing] otlp_endpoint` set the run is exported as a span (with its chain and
 * delivery as children) to an OTLP/HTTP receiver, as the JSON protocol encodes it, under the ids
 * the traceparent named.
 */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
  events?: { name: string }[];
  status?: { code?: number };
}

const t = daemonPerTest();

const listen = async (handler: (req: IncomingMessage, body: string) => [number, string]) => {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const [status, text] = handler(req, body);
      res.writeHead(status, { "content-type": "application/json" }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
};

describe(`run tracing (${backendName})`, () => {
  let agent: Server;
  let collector: Server;
  let agentUrl: string;
  let collectorUrl: string;
  const calls: { headers: IncomingMessage["headers"]; runId: string }[] = [];
  const spans: OtlpSpan[] = [];
  const resources: Record<string, unknown>[] = [];

  beforeAll(async () => {
    ({ server: agent, url: agentUrl } = await listen((req, body) => {
      calls.push({ headers: req.headers, runId: (JSON.parse(body) as { runId: string }).runId });
      return body.includes("FAIL") ? [400, "no"] : [200, "done"];
    }));
    ({ server: collector, url: collectorUrl } = await listen((req, body) => {
      expect(req.url).toBe("/v1/traces");
      const exported = JSON.parse(body) as {
        resourceSpans: { resource: Record<string, unknown>; scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      for (const r of exported.resourceSpans) {
        resources.push(r.resource);
        for (const scope of r.scopeSpans) spans.push(...scope.spans);
      }
      return [200, "{}"];
    }));
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => agent.close(() => resolve()));
    await new Promise<void>((resolve) => collector.close(() => resolve()));
  });
  beforeEach(() => {
    calls.length = 0;
    spans.length = 0;
    resources.length = 0;
  });

  const agentToml = () => `[agents.traced]\nexecutor = "webhook"\nurl = "${agentUrl}/"\ntimeout = "2s"\n`;
  const attr = (span: OtlpSpan, key: string) => {
    const value = span.attributes.find((a) => a.key === key)?.value;
    return value?.stringValue ?? (value?.intValue !== undefined ? Number(value.intValue) : undefined);
  };

  it("exports the run as a span with chain and delivery children, under the traceparent the agent received", async () => {
    const daemon = await t.start({
      toml: `${agentToml()}[tracing]\notlp_endpoint = "${collectorUrl}/v1/traces"\nservice_name = "ops-missiond"\n`,
    });
    const job = await daemon.services.cron.add({ name: "traced", agentId: "traced", every: "1h", prompt: "go" });
    const failing = await daemon.services.cron.add({ name: "refused", agentId: "traced", every: "1h", prompt: "FAIL" });
    const run = await daemon.services.cron.trigger(job.id);
    const failed = await daemon.services.cron.trigger(failing.id);

    const root = await waitFor(
      async () => spans.find((s) => attr(s, "missiond.run.id") === run.id),
      "the run's span",
      20_000,
    );
    const call = calls.find((c) => c.runId === run.id)!;
    expect(call.headers["x-missiond-run-id"]).toBe(run.id);
    const [version, traceId, parentId, flags] = String(call.headers.traceparent).split("-");
    expect([version, flags]).toEqual(["00", "01"]);
    expect({ traceId: root.traceId, spanId: root.spanId }).toEqual({ traceId, spanId: parentId });
    expect(root.parentSpanId ?? "").toBe("");
    expect(root.name).toBe("run traced");
    expect(attr(root, "missiond.run.status")).toBe("Succeeded");
    expect(attr(root, "missiond.run.trigger")).toBe("manual");
    expect(attr(root, "missiond.job.id")).toBe(job.id);
    expect(root.events?.map((e) => e.name)).toEqual(["claimed"]);

    const children = await waitFor(
      async () => {
        const found = spans.filter((s) => s.parentSpanId === root.spanId);
        return found.length === 2 ? found : undefined;
      },
      "the run's child spans",
      20_000,
    );
    expect(children.map((s) => s.name).sort()).toEqual(["chain", "delivery"]);
    for (const child of children) {
      expect(child.traceId).toBe(root.traceId);
      expect(BigInt(child.startTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(root.startTimeUnixNano));
      expect(BigInt(child.endTimeUnixNano)).toBeLessThanOrEqual(BigInt(root.endTimeUnixNano));
    }
    const shown = await daemon.services.cron.run(run.id);
    expect(BigInt(root.endTimeUnixNano) / 1_000_000n).toBe(BigInt(Date.parse(shown.finishedAt!)));
    expect(JSON.stringify(resources[0])).toContain("ops-missiond");

    const failedSpan = await waitFor(
      async () => spans.find((s) => attr(s, "missiond.run.id") === failed.id),
      "the failed run's span",
      20_000,
    );
    expect(attr(failedSpan, "missiond.run.status")).toBe("Failed");
    expect(failedSpan.status?.code).toBe(2);
  });

  const tracedToml = () => `${agentToml()}[tracing]\notlp_endpoint = "${collectorUrl}/v1/traces"\n`;
  const spanOf = (runId: string, what: string) =>
    waitFor(async () => spans.find((s) => attr(s, "missiond.run.id") === runId), what, 20_000);

  it("exports a run a plugin defers as a span with its status, reason and chain, and no delivery", async () => {
    const daemon = await t.start({ toml: tracedToml(), pluginDirs: [fixturePlugin("defers-once")] });
    const job = await daemon.services.cron.add({ name: "held", agentId: "traced", every: "1h", prompt: "go" });
    const run = await daemon.services.cron.trigger(job.id);
    const root = await spanOf(run.id, "the deferred run's span");
    expect(root.name).toBe("run held");
    expect(attr(root, "missiond.run.status")).toBe("Deferred");
    expect(attr(root, "missiond.run.reason")).toBe("holding the first slot");
    expect(attr(root, "missiond.run.decided_by")).toBe("defers-once");
    expect(attr(root, "missiond.job.id")).toBe(job.id);
    expect(root.status?.code ?? 0).toBe(0);
    // The continuation reaches the agent; by the time its span is in, the deferred run's children are too.
    const continued = await waitFor(
      async () => (await daemon.services.cron.runs({ jobId: job.id, limit: 10 })).find((r) => r.trigger === "deferred"),
      "the continuation",
      20_000,
    );
    await spanOf(continued.id, "the continuation's span");
    expect(spans.filter((s) => s.parentSpanId === root.spanId).map((s) => s.name)).toEqual(["chain"]);
    expect(calls.map((c) => c.runId)).not.toContain(run.id);
  });

  it("exports a run Skipped over its budget as a span with its reason and no children", async () => {
    const daemon = await t.start({ toml: tracedToml() });
    const job = await daemon.services.cron.add({
      name: "thrifty",
      agentId: "traced",
      every: "1h",
      prompt: "go",
      budget: "1 runs/hour",
    });
    const first = await daemon.services.cron.trigger(job.id);
    await spanOf(first.id, "the first run's span");
    const skipped = await daemon.services.cron.trigger(job.id);
    expect(skipped.status).toBe("Skipped");
    const root = await spanOf(skipped.id, "the skipped run's span");
    expect(attr(root, "missiond.run.status")).toBe("Skipped");
    expect(attr(root, "missiond.run.reason")).toBe(skipped.reason);
    expect(String(attr(root, "missiond.run.reason"))).toMatch(/^budget: /);
    // A child ends before its parent, so it is exported in the parent's batch or an earlier one.
    expect(spans.filter((s) => s.parentSpanId === root.spanId)).toEqual([]);
    expect(calls.map((c) => c.runId)).toEqual([first.id]);
  });

  it("sends the traceparent and the run id to the agent with tracing off", async () => {
    const daemon = await t.start({ toml: agentToml() });
    const job = await daemon.services.cron.add({ name: "quiet", agentId: "traced", every: "1h", prompt: "go" });
    const run = await daemon.services.cron.trigger(job.id);
    const call = await waitFor(async () => calls.find((c) => c.runId === run.id), "the agent's call", 20_000);
    expect(call.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(call.headers["x-missiond-run-id"]).toBe(run.id);
  });
});
