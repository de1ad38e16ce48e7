import { describe, expect, it } from "vitest";
import { apiClient, ApiError } from "../../src/cli/client.ts";
import type { AlertView } from "../../src/alerts/service.ts";
import { alerts } from "../../src/db/schema/index.ts";
import type { AlertKind } from "../../src/db/schema/enums.ts";
import { cli } from "../helpers/cli.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";

const t = daemonPerTest();

/** Alerts of several kinds and subjects, as the evaluator would have written them (all resolved). */
const HISTORY: { kind: AlertKind; subject: string | null; cronJobId?: bigint }[] = [
  { kind: "failing", subject: "job:1", cronJobId: 1n },
  { kind: "missed", subject: "job:1", cronJobId: 1n },
  { kind: "failing", subject: "job:2", cronJobId: 2n },
  // Written by the release before the subject column: it is `job:3` all the same.
  { kind: "failing", subject: null, cronJobId: 3n },
  { kind: "agent_failing", subject: "agent:ops-bot" },
  { kind: "scheduler_unarmed", subject: "scheduler@host-a" },
];

describe(`GET /v1/alerts and \`alerts ls\` filtered by kind and subject (${backendName})`, () => {
  const seeded = async () => {
    const daemon = await t.start();
    const at = new Date("2026-01-01T00:00:00Z");
    await daemon.services.database.db.insert(alerts).values(
      HISTORY.map((h) => ({
        kind: h.kind,
        severity: "critical" as const,
        cronJobId: h.cronJobId ?? null,
        subject: h.subject,
        summary: `${h.kind} ${h.subject ?? `job:${h.cronJobId}`}`,
        details: {},
        openedAt: at,
        notifiedAt: at,
        resolvedAt: at,
      })),
    );
    const api = apiClient({ socketPath: daemon.config.socketPath });
    const list = async (query: Record<string, string>) =>
      (await api.get<{ alerts: AlertView[] }>("/v1/alerts", query)).alerts.map((a) => `${a.kind} ${a.subject}`).sort();
    return { daemon, api, list };
  };

  it("kind keeps the alerts of that kind, subject those about it, both together both", async () => {
    const { list } = await seeded();
    expect(await list({ kind: "failing" })).toEqual(["failing job:1", "failing job:2", "failing job:3"]);
    expect(await list({ subject: "job:1" })).toEqual(["failing job:1", "missed job:1"]);
    expect(await list({ subject: "job:1", kind: "missed" })).toEqual(["missed job:1"]);
    expect(await list({ subject: "job:3" })).toEqual(["failing job:3"]);
    expect(await list({ subject: "agent:ops-bot" })).toEqual(["agent_failing agent:ops-bot"]);
    expect(await list({ subject: "job:9" })).toEqual([]);
    expect(await list({})).toHaveLength(HISTORY.length);
  });

  it("an unknown kind is refused naming the kinds, and the CLI passes --kind and --subject on", async () => {
    const { daemon, api } = await seeded();
    const err: unknown = await api.get("/v1/alerts", { kind: "exploded" }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    expect((err as ApiError).message).toMatch(/kind must be one of failing, missed, silent/);

    const ls = await cli(daemon, "alerts", "ls", "--kind", "failing", "--subject", "job:2", "--json");
    expect(ls.code).toBe(0);
    expect((JSON.parse(ls.stdout) as AlertView[]).map((a) => `${a.kind} ${a.subject}`)).toEqual(["failing job:2"]);
    const bad = await cli(daemon, "alerts", "ls", "--kind", "exploded");
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/kind must be one of/);
  });
});
