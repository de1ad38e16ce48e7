// A day of realistic history for the dashboard's screenshots: jobs and heartbeats of a small ops
// team, their runs over the last 24 hours (written straight into the ledger), notify timers,
// sessions with todos, and hook calls that the example plugins decide on.
import type { Executor } from "../src/db/client.ts";
import type { RunStatus } from "../src/db/schema/index.ts";
import { parseEvery, slotsBetween, type Schedule } from "../src/cron/schedule.ts";
import { insertRunRows, type RunRow } from "../test/helpers/ledger.ts";

interface DemoJob {
  body: Record<string, unknown>;
  /** How far back its history goes (its schedule's slots since then), or null for none. */
  historyMs: number | null;
}

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

export const DEMO_JOBS: DemoJob[] = [
  {
    body: {
      name: "nightly-backup-check",
      agentId: "ops-agent",
      cron: "30 2 * * *",
      timezone: "Europe/Berlin",
      prompt:
        "Check that last night's database and object-store backups completed and restore one table as a spot check.",
    },
    historyMs: DAY,
  },
  {
    body: {
      name: "inbox-triage",
      kind: "heartbeat",
      agentId: "assistant",
      every: "30m",
      timezone: "Europe/Berlin",
      activeHours: "08:00-20:00",
      skipIfBusy: true,
      prompt: "Anything new in the shared inbox? Label, answer the routine ones, flag the rest.",
    },
    historyMs: DAY,
  },
  {
    body: {
      name: "queue-depth-probe",
      agentId: "ops-agent",
      cron: "*/10 * * * * *",
      prompt: "Read the missions queue depth and alert if it grows three probes in a row.",
    },
    historyMs: 2 * HOUR,
  },
  {
    body: {
      name: "release-freeze-check",
      agentId: "release-bot",
      cron: "*/30 * * * * *",
      prompt: "HOLD: release freeze until the incident review is done. Deploy the staged release.",
    },
    historyMs: 2 * HOUR,
  },
  {
    body: {
      name: "pr-review-sweep",
      kind: "heartbeat",
      agentId: "reviewer",
      every: "15m",
      prompt: "Review open pull requests waiting for more than an hour; summarise blockers.",
    },
    historyMs: DAY,
  },
  {
    body: {
      name: "disk-usage-watch",
      agentId: "ops-agent",
      every: "5m",
      prompt: "Check disk usage on the build hosts; clean caches above 85 %.",
    },
    historyMs: DAY,
  },
  {
    body: {
      name: "standup-summary",
      agentId: "assistant",
      cron: "0 9 * * 1-5",
      timezone: "Europe/London",
      prompt: "Summarise yesterday's merged work and today's calendar for the standup.",
    },
    historyMs: DAY,
  },
  {
    body: {
      name: "weekly-report",
      agentId: "analyst",
      cron: "0 9 * * 1",
      timezone: "America/New_York",
      prompt: "Write the weekly usage and cost report.",
    },
    historyMs: null,
  },
  {
    body: {
      name: "cert-expiry-scan",
      agentId: "ops-agent",
      cron: "0 8 * * *",
      timezone: "Asia/Tokyo",
      prompt: "List TLS certificates expiring within 21 days and open renewal tickets.",
    },
    historyMs: DAY,
  },
  {
    body: {
      name: "billing-reconcile",
      agentId: "finance-bot",
      cron: "0 */4 * * *",
      prompt: "Reconcile yesterday's invoices against payments.",
      paused: true,
      pausedNote: "paused during the billing migration, until Friday (ops #482)",
    },
    historyMs: DAY,
  },
  {
    body: {
      name: "support-handoff",
      kind: "heartbeat",
      agentId: "assistant",
      every: "1h",
      timezone: "America/New_York",
      activeHours: "09:00-17:00",
      prompt: "Hand over open support threads to the next shift with a short status.",
    },
    historyMs: DAY,
  },
  {
    body: {
      name: "log-rotation-verify",
      agentId: "ops-agent",
      cron: "15 3 * * *",
      timezone: "UTC",
      prompt: "Verify yesterday's logs were rotated and shipped.",
    },
    historyMs: DAY,
  },
  {
    body: {
      name: "dependency-audit",
      agentId: "reviewer",
      cron: "0 6 * * 0",
      timezone: "Europe/Berlin",
      prompt: "Run the dependency audit and open pull requests for patched versions.",
    },
    historyMs: null,
  },
  {
    body: {
      name: "month-end-close",
      agentId: "finance-bot",
      cron: "0 7 L * *",
      timezone: "Europe/Paris",
      prompt: "Prepare the month-end close checklist.",
    },
    historyMs: null,
  },
];

/** A deterministic stream of numbers in [0, 1) (the same demo every time). */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const FAILURES = [
  "exit 1: ssh: connect to host build-3 port 22: Connection timed out",
  "exit 2: backup manifest missing for bucket eu-archive",
  "exit 1: HTTP 502 from the ticketing API",
];

/** The slots of a job's schedule in [since, until). */
function pastSlots(
  job: { cron: string | null; every: string | null; timezone: string; nextFireAt: string | null },
  since: number,
  until: number,
): number[] {
  const schedule: Schedule = job.cron
    ? { kind: "cron", expr: job.cron, timezone: job.timezone }
    : {
        kind: "every",
        everyMs: parseEvery(job.every!),
        anchor: new Date(Date.parse(job.nextFireAt ?? new Date(until).toISOString()) - 10_000 * parseEvery(job.every!)),
      };
  return slotsBetween(schedule, new Date(since - 1), new Date(until - 1), 20_000).map((d) => d.getTime());
}

/** A job's history since `since`: mostly Succeeded, some failures and skips, a plugin's vetoes, and an outage. */
export function demoHistory(job: DemoJobView, since: number, now: number, seed: number): RunRow[] {
  const next = random(seed);
  const outage = [now - 9 * HOUR, now - 8 * HOUR - 20 * MIN];
  const rows: RunRow[] = [];
  for (const at of pastSlots(job, since, now - 90_000).reverse()) {
    const fired = `${job.prompt}\n\n[cron-sentinel] fired cron_job "${job.name}".`;
    const roll = next();
    let status: RunStatus = "Succeeded";
    let reason: string | null = null;
    let decidedBy: string | null = null;
    let output: string | null = `logged mission for agent ${job.agentId}`;
    if (outsideHours(job, at)) {
      status = "Skipped";
      reason = `outside active hours ${job.activeHours} (${job.timezone})`;
      output = null;
    } else if (at >= outage[0]! && at < outage[1]!) {
      status = "Missed";
      reason = "missed while no instance was running (catch-up: latest)";
      output = null;
    } else if (job.prompt.includes("HOLD")) {
      status = "Cancelled";
      decidedBy = "cron-sentinel";
      reason = "[cron-sentinel] refused: prompt carries HOLD";
      output = null;
    } else if (roll < 0.04) {
      status = "Failed";
      output = FAILURES[Math.floor(next() * FAILURES.length)]!;
      reason = output;
    } else if (roll < 0.06) {
      status = "TimedOut";
      reason = "the executor did not finish within 5m";
      output = "still waiting for the agent's answer when the timeout hit";
    } else if (roll < 0.09) {
      status = "Skipped";
      reason = "overlap: the previous run is still Running";
      output = null;
    }
    const ran = status === "Succeeded" || status === "Failed" || status === "TimedOut";
    rows.push({
      jobId: job.id,
      scheduledFor: new Date(at),
      status,
      reason,
      decidedBy,
      promptFired: ran ? fired : null,
      output,
      latenessMs: 2 + Math.floor(next() * 14),
    });
  }
  return rows;
}

interface DemoJobView {
  id: string;
  name: string;
  agentId: string;
  prompt: string;
  cron: string | null;
  every: string | null;
  timezone: string;
  activeHours: string | null;
  nextFireAt: string | null;
}

/** "HH:MM" of an instant in a time zone. */
const localTime = (at: number, timeZone: string) =>
  new Intl.DateTimeFormat("en-GB", { timeZone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(at);

function outsideHours(job: DemoJobView, at: number): boolean {
  if (!job.activeHours) return false;
  const [start, end] = job.activeHours.split("-") as [string, string];
  const t = localTime(at, job.timezone);
  return start <= end ? t < start || t >= end : t < start && t >= end;
}

type Call = (method: "GET" | "POST", path: string, body?: unknown) => Promise<unknown>;

/** Creates the demo's jobs, history, timers, sessions and hook decisions through the API (history through SQL). */
export async function seedDemo(call: Call, db: Executor, now = Date.now()): Promise<void> {
  let seed = 7;
  for (const demo of DEMO_JOBS) {
    const job = (await call("POST", "/v1/cron-jobs", demo.body)) as DemoJobView;
    if (demo.historyMs) await insertRunRows(db, demoHistory(job, now - demo.historyMs, now, seed++));
  }
  for (const [id, agentId] of [
    ["ops-oncall", "ops-agent"],
    ["research-7f3a", "analyst"],
    ["support-desk", "assistant"],
    ["release-train", "release-bot"],
  ] as const) {
    await call("POST", "/v1/sessions", { id, agentId });
  }
  await call("POST", "/v1/sessions/ops-oncall/todos", {
    texts: [
      "Rotate the staging database password",
      "Close the disk-usage alert on build-3",
      "Write the incident note for the 02:14 outage",
    ],
  });
  await call("POST", "/v1/sessions/research-7f3a/todos", {
    texts: ["Compare last week's token usage per agent", "Draft the cost section of the weekly report"],
  });
  await call("POST", "/v1/sessions/support-desk/todos", { texts: ["Answer the refund request from ACME"] });
  for (const [sessionId, message, delaySeconds] of [
    ["ops-oncall", "Re-check build-3 disk usage after the cache clean-up", 4 * 60],
    ["research-7f3a", "Resume the cost analysis once the export lands", 20 * 60],
    ["support-desk", "Follow up on the ACME refund if there is no answer", 2 * 3600],
    ["release-train", "Ask again whether the freeze is lifted", 45 * 60],
  ] as const) {
    await call("POST", "/v1/notify", { sessionId, message, delaySeconds });
  }
  // Hooks an agent runtime reports: the example plugins allow, rewrite or refuse them.
  const ssh = { sessionId: "ops-oncall", agentId: "ops-agent", sshHostId: "h3", hostDisplayName: "build-3" };
  for (const command of ["df -h /var", "rm -rf /", "du -sh /var/cache/*", "rm -rf / --no-preserve-root"]) {
    await call("POST", "/v1/hooks/sshCommandSending", { ...ssh, kind: "command", command, path: null, content: null });
  }
  for (const text of [
    "Deployed. The staging token is ghp_16C7e42F292c6912E7710c838347Ae178B4a, rotate it tomorrow.",
    "All green: 14 jobs ran, none late.",
  ]) {
    await call("POST", "/v1/hooks/assistantMessageOutbound", { sessionId: "support-desk", channelId: "c1", text });
  }
  await call("POST", "/v1/hooks/systemPrompt", {
    sessionId: "research-7f3a",
    agentId: "analyst",
    sessionKind: "direct",
    systemPrompt: "You are a careful analyst. Explain your reasoning step by step.",
  });
}
