import { existsSync } from "node:fs";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { loadConfig, type Config } from "../config/load.ts";
import { previewSlots, assertCron, parseEvery, type Schedule } from "../cron/schedule.ts";
import type { JobView, RunView } from "../cron/views.ts";
import { NOTIFY_STATUSES, RUN_STATUSES } from "../db/schema/enums.ts";
import { parseDuration } from "../duration.ts";
import type { TimerView } from "../notify/views.ts";
import type { ClearView } from "../sessions/clears.ts";
import type { TodoView } from "../todos/service.ts";
import { grantSummary } from "../plugins/grants.ts";
import { HOOK_NAMES } from "../plugins/hooks.ts";
import { isMissiondError } from "../errors.ts";
import type { PluginInfo } from "../plugins/service.ts";
import { apiClient, ApiError, UnreachableError, type ApiClient, type Target } from "./client.ts";
import { addExamples, commandPath } from "./examples.ts";
import { shorten, table } from "./format.ts";
import { EXIT, type CliIo } from "./io.ts";

const SYSTEMD_SOCKET = "/run/missiond/missiond.sock";

interface GlobalOptions {
  config?: string;
  socket?: string;
  url?: string;
  token?: string;
  json?: boolean;
}

/** Runs one CLI invocation; resolves to the process exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode: number = EXIT.OK;
  const program = buildProgram(io, (code) => (exitCode = code));
  try {
    await program.parseAsync([...argv], { from: "user" });
    return exitCode;
  } catch (err) {
    return reportError(err, io);
  }
}

/** Every command's path ("cron add"), the program itself as "". */
export function commandPaths(io: CliIo): string[] {
  const paths: string[] = [];
  const visit = (command: Command) => {
    paths.push(commandPath(command));
    for (const sub of command.commands) visit(sub);
  };
  visit(buildProgram(io, () => {}));
  return paths;
}

function reportError(err: unknown, io: CliIo): number {
  // Commander prints its own parse errors; ours (thrown from an action) are printed here.
  if (err instanceof CommanderErrorLike) {
    io.stderr(`missiond: ${err.message}\n`);
    return EXIT.USAGE;
  }
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  if (err instanceof UnreachableError) {
    io.stderr(`missiond: ${err.message}\n`);
    return EXIT.UNREACHABLE;
  }
  if (err instanceof ApiError) {
    io.stderr(`missiond: ${err.message} (${err.code})\n`);
    return err.status === 404 ? EXIT.NOT_FOUND : err.status === 400 ? EXIT.USAGE : EXIT.ERROR;
  }
  if (isMissiondError(err)) {
    io.stderr(`missiond: ${err.message}\n`);
    return err.code === "NOT_FOUND" ? EXIT.NOT_FOUND : err.status === 400 ? EXIT.USAGE : EXIT.ERROR;
  }
  io.stderr(`missiond: ${(err as Error).message ?? String(err)}\n`);
  return EXIT.ERROR;
}

function buildProgram(io: CliIo, setExit: (code: number) => void): Command {
  const program = new Command("missiond")
    .description("owns the time and the lifecycle of AI-agent sessions")
    .option("--config <path>", "configuration file (default /etc/missiond/config.toml if present)")
    .option("--socket <path>", "the daemon's Unix socket")
    .option("--url <url>", "reach the daemon over TCP instead (needs --token or MISSIOND_API_TOKEN)")
    .option("--token <token>", "bearer token for --url")
    .option("--json", "print JSON instead of tables")
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) })
    .showHelpAfterError();

  const globals = (): GlobalOptions => program.opts<GlobalOptions>();
  const config = (): Config =>
    loadConfig({ configPath: globals().config, env: io.env, cwd: io.cwd, hostname: io.hostname, pid: io.probe.pid });
  const client = (): ApiClient => apiClient(target(globals(), io, config));
  const print = (value: unknown, human: () => string) =>
    io.stdout(`${globals().json ? JSON.stringify(value, null, 2) : human()}\n`);

  program
    .command("serve")
    .description("run the daemon (embedded database in ./.missiond unless DATABASE_URL is set)")
    // Loaded on demand: the daemon's dependencies (database drivers, pg-boss) would slow every
    // other command down.
    .action(async () => setExit(await (await import("./serve.ts")).serve(config(), io)));

  program
    .command("migrate")
    .description("apply database migrations and exit (talks to the database directly)")
    .action(async () => setExit(await (await import("./serve.ts")).migrateOnly(config(), io)));

  program
    .command("config")
    .description("the configuration (no daemon needed)")
    .command("check")
    .description(
      "validate the config file and environment overrides and print the effective configuration (secrets redacted); exit 1 naming the key when invalid",
    )
    .action(async () =>
      setExit(
        (await import("./config-check.ts")).configCheck(io, { configPath: globals().config, json: globals().json }),
      ),
    );

  const cron = program.command("cron").description("cron jobs and heartbeats");
  cron
    .command("add")
    .description("add a cron job or heartbeat")
    .requiredOption("--name <name>", "unique name")
    .requiredOption("--agent <id>", "target agent")
    .requiredOption("--prompt <text>", "the mission's prompt")
    .option("--cron <expr>", 'cron expression, 5 or 6 fields (seconds first), e.g. "*/5 * * * * *"')
    .option("--every <duration>", "interval, e.g. 30m")
    .option("--tz <zone>", "IANA time zone for --cron", "UTC")
    .addOption(new Option("--kind <kind>", "job kind").choices(["cron_job", "heartbeat"]).default("cron_job"))
    .addOption(
      new Option("--overlap <policy>", "when the previous run is still going")
        .choices(["skip", "allow", "buffer_one", "cancel_previous"])
        .default("skip"),
    )
    .addOption(new Option("--catchup <policy>", "after downtime").choices(["skip", "latest", "all"]).default("latest"))
    .option("--session <id>", "run every mission in this fixed session (default: a fresh session per run)")
    .option("--active-hours <from-to>", 'only fire within these local hours, e.g. "09:00-18:00" (in --tz)')
    .option("--skip-if-busy", "skip a slot while the agent's session already has a mission running")
    .option("--jitter <duration>", "spread this job's slots by a fixed offset up to this, e.g. 30s")
    .option("--starts-at <iso>", "no slot before this instant (ISO 8601 with offset)")
    .option("--ends-at <iso>", "no slot after this instant")
    .option("--max-runs <n>", "stop after this many runs", positiveInt)
    .option("--paused", "create it paused")
    .action(async (opts) => {
      const job = await client().post<JobView>("/v1/cron-jobs", {
        name: opts.name,
        agentId: opts.agent,
        prompt: opts.prompt,
        cron: opts.cron,
        every: opts.every,
        timezone: opts.tz,
        kind: opts.kind,
        overlapPolicy: opts.overlap,
        catchupPolicy: opts.catchup,
        ...(opts.session ? { sessionMode: "fixed", sessionId: opts.session } : {}),
        ...(opts.activeHours ? { activeHours: opts.activeHours } : {}),
        ...(opts.skipIfBusy ? { skipIfBusy: true } : {}),
        ...(opts.jitter ? { jitter: opts.jitter } : {}),
        ...(opts.startsAt ? { startsAt: opts.startsAt } : {}),
        ...(opts.endsAt ? { endsAt: opts.endsAt } : {}),
        ...(opts.maxRuns !== undefined ? { maxRuns: opts.maxRuns } : {}),
        paused: Boolean(opts.paused),
      });
      print(job, () => `added cron job ${job.id} "${job.name}"; next fire ${job.nextFireAt ?? "never"}`);
    });

  cron
    .command("ls")
    .description("list cron jobs")
    .action(async () => {
      const { jobs } = await client().get<{ jobs: JobView[] }>("/v1/cron-jobs");
      print(jobs, () =>
        table(
          ["ID", "NAME", "KIND", "AGENT", "SCHEDULE", "TZ", "NEXT FIRE", "STATE"],
          jobs.map((j) => [
            j.id,
            j.name,
            j.kind,
            j.agentId,
            j.cron ?? `every ${j.every}`,
            j.timezone,
            j.nextFireAt,
            j.paused ? `paused${j.pausedNote ? `: ${j.pausedNote}` : ""}` : "active",
          ]),
        ),
      );
    });

  cron
    .command("show <id>")
    .description("show one cron job")
    .action(async (id: string) => {
      const job = await client().get<JobView>(`/v1/cron-jobs/${encodeURIComponent(id)}`);
      print(job, () =>
        Object.entries(job)
          .map(([k, v]) => `${k.padEnd(14)} ${v ?? "-"}`)
          .join("\n"),
      );
    });

  cron
    .command("pause <id>")
    .description("stop claiming a job's slots until it is resumed")
    .option("--note <text>", "why (shown in cron ls)")
    .action(async (id: string, opts: { note?: string }) => {
      const job = await client().post<JobView>(
        `/v1/cron-jobs/${encodeURIComponent(id)}/pause`,
        opts.note ? { note: opts.note } : {},
      );
      print(job, () => `paused cron job ${job.id} "${job.name}"${job.pausedNote ? `: ${job.pausedNote}` : ""}`);
    });

  cron
    .command("resume <id>")
    .description("resume a paused job from its next slot")
    .action(async (id: string) => {
      const job = await client().post<JobView>(`/v1/cron-jobs/${encodeURIComponent(id)}/resume`, {});
      print(job, () => `resumed cron job ${job.id} "${job.name}"; next fire ${job.nextFireAt ?? "never"}`);
    });

  cron
    .command("trigger <id>")
    .description("run a job now, outside its schedule (a run of its own, through the plugin chain)")
    .action(async (id: string) => {
      const run = await client().post<RunView>(`/v1/cron-jobs/${encodeURIComponent(id)}/trigger`, {});
      print(run, () => `triggered run ${run.id} of cron job ${run.cronJobId}`);
    });

  cron
    .command("rm <id>")
    .description("remove a cron job (its run history is kept)")
    .action(async (id: string) => {
      await client().delete(`/v1/cron-jobs/${encodeURIComponent(id)}`);
      print({ removed: id }, () => `removed cron job ${id}`);
    });

  cron
    .command("preview <schedule>")
    .description('next fire times of a cron expression or "every 30m" (computed locally, no daemon needed)')
    .option("--tz <zone>", "IANA time zone", "UTC")
    .option("-n, --count <n>", "how many", "10")
    .action(async (expr: string, opts: { tz: string; count: string }) => {
      const count = Number(opts.count);
      if (!Number.isInteger(count) || count < 1 || count > 1000)
        throw new CommanderErrorLike("--count must be an integer from 1 to 1000");
      const now = new Date();
      let schedule: Schedule;
      if (/^every\s/i.test(expr)) schedule = { kind: "every", everyMs: parseEvery(expr), anchor: now };
      else {
        assertCron(expr, opts.tz);
        schedule = { kind: "cron", expr, timezone: opts.tz };
      }
      const times = previewSlots(schedule, now, count).map((d) => d.toISOString());
      print(times, () => times.join("\n"));
    });

  const runs = program.command("runs").description("the run ledger");
  runs
    .command("ls")
    .description("list runs, newest slot first")
    .option("--job <id>", "only this job's runs")
    .addOption(new Option("--status <status>", "only runs with this status").choices(RUN_STATUSES))
    .option("--limit <n>", "at most this many", "50")
    .action(async (opts: { job?: string; status?: string; limit: string }) => {
      const { runs: list } = await client().get<{ runs: RunView[] }>("/v1/runs", {
        jobId: opts.job,
        status: opts.status,
        limit: opts.limit,
      });
      print(list, () =>
        table(
          ["ID", "JOB", "SCHEDULED FOR", "STATUS", "LATE MS", "BY", "REASON"],
          list.map((r) => [
            r.id,
            r.cronJobId,
            r.scheduledFor,
            r.status,
            r.latenessMs,
            r.decidedBy ?? r.claimedBy,
            shorten(r.reason, 80),
          ]),
        ),
      );
    });

  program
    .command("doctor")
    .description("what is late, stuck, failing or misconfigured; exits 1 when it finds anything")
    .action(async () => {
      const report = await client().get<Diagnosis>("/v1/doctor");
      const sections: [string, unknown[], (item: never) => string][] = [
        [
          "jobs that should have fired but did not",
          report.overdueJobs,
          (j: Diagnosis["overdueJobs"][number]) =>
            `job ${j.id} "${j.name}": next slot ${j.nextFireAt}, ${j.lateBySeconds}s ago`,
        ],
        [
          "stuck runs",
          report.stuckRuns,
          (r: Diagnosis["stuckRuns"][number]) =>
            `run ${r.id} of job ${r.cronJobId}: ${r.status} since ${r.since} (${r.claimedBy})`,
        ],
        [
          "notify timers that should have been delivered",
          report.overdueTimers,
          (t: Diagnosis["overdueTimers"][number]) => `timer ${t.id} for session ${t.sessionId}: due ${t.dueAt}`,
        ],
        [
          "agents whose missions failed in the last 24 h",
          report.failingAgents,
          (a: Diagnosis["failingAgents"][number]) =>
            `${a.agentId}: ${a.failures} failed, last ${a.lastStatus} at ${a.lastFailureAt}`,
        ],
        [
          "plugins not active",
          report.plugins,
          (p: Diagnosis["plugins"][number]) => `${p.name}: ${p.state}${p.error ? ` (${p.error})` : ""}`,
        ],
      ];
      print(report, () => {
        const lines = sections.flatMap(([title, items, line]) =>
          items.length ? [`${title}:`, ...items.map((i) => `  ${line(i as never)}`)] : [],
        );
        if (Math.abs(report.clockSkewMs) > 1_000)
          lines.push(`clock: the local clock is ${report.clockSkewMs} ms off the database's`);
        if (!report.schedulerArmed) lines.push("scheduler: not armed");
        return lines.length ? lines.join("\n") : "all good: nothing late, stuck, failing or misconfigured";
      });
      if (!report.ok) setExit(EXIT.ERROR);
    });

  const agent = program.command("agent").description("agents and how their missions are delivered");
  agent
    .command("ls")
    .description("agents from the config file and those set over the API")
    .action(async () => {
      const { agents } = await client().get<{
        agents: { id: string; source: string; executor: string; settings: Record<string, unknown> }[];
      }>("/v1/agents");
      print(agents, () =>
        table(
          ["ID", "SOURCE", "EXECUTOR", "SETTINGS"],
          agents.map((a) => [a.id, a.source, a.executor, JSON.stringify(a.settings)]),
        ),
      );
    });
  agent
    .command("set <id>")
    .description("set (or replace) an agent's executor")
    .addOption(
      new Option("--executor <kind>", "how missions reach it")
        .choices(["log", "webhook", "command"])
        .makeOptionMandatory(),
    )
    .option("--url <url>", "webhook: where to POST missions")
    .option("--secret <secret>", "webhook: HMAC key for the signature header")
    .option("--timeout <duration>", "webhook or command: time limit per mission")
    .option("--argv <args...>", "command: the program and its arguments")
    .action(
      async (
        id: string,
        opts: { executor: string; url?: string; secret?: string; timeout?: string; argv?: string[] },
      ) => {
        const body = Object.fromEntries(
          Object.entries({
            executor: opts.executor,
            url: opts.url,
            secret: opts.secret,
            timeout: opts.timeout,
            argv: opts.argv,
          }).filter(([, v]) => v !== undefined),
        );
        const saved = await client().put<{ id: string; executor: string }>(
          `/v1/agents/${encodeURIComponent(id)}`,
          body,
        );
        print(saved, () => `agent ${saved.id}: ${saved.executor}`);
      },
    );
  agent
    .command("rm <id>")
    .description("remove an agent set over the API (its missions then go to the log)")
    .action(async (id: string) => {
      await client().delete(`/v1/agents/${encodeURIComponent(id)}`);
      print({ removed: id }, () => `removed agent ${id}`);
    });

  const session = program.command("session").description("agent sessions as the runtime reports them");
  session
    .command("add")
    .description("register a session")
    .requiredOption("--agent <id>", "the agent it belongs to")
    .option("--id <id>", "its id (default: a new UUID)")
    .option("--kind <kind>", "snake_case kind, e.g. direct or channel", "direct")
    .action(async (opts: { agent: string; id?: string; kind: string }) => {
      const created = await client().post<{ id: string }>("/v1/sessions", {
        id: opts.id,
        agentId: opts.agent,
        kind: opts.kind,
      });
      print(created, () => `added session ${created.id}`);
    });
  session
    .command("ls")
    .description("list sessions, most recently active first")
    .action(async () => {
      const { sessions } = await client().get<{
        sessions: {
          id: string;
          agentId: string;
          kind: string;
          messageCount: number;
          subagentCount: number;
          peerThreadCount: number;
          updatedAt: string;
        }[];
      }>("/v1/sessions");
      print(sessions, () =>
        table(
          ["ID", "AGENT", "KIND", "MESSAGES", "SUBAGENTS", "PEERS", "UPDATED"],
          sessions.map((s) => [
            s.id,
            s.agentId,
            s.kind,
            s.messageCount,
            s.subagentCount,
            s.peerThreadCount,
            s.updatedAt,
          ]),
        ),
      );
    });

  session
    .command("clear <id>")
    .description(
      "/new: delete the session's transcript, direct subagents and peer threads (durable; resumed after a crash)",
    )
    .option("--text <text>", "the trailing text typed after /new")
    .action(async (id: string, opts: { text?: string }) => {
      const clear = await client().post<ClearView>(
        `/v1/sessions/${encodeURIComponent(id)}/clear`,
        opts.text !== undefined ? { trailingText: opts.text } : {},
      );
      print(
        clear,
        () =>
          `cleared session ${clear.sessionId} (clear ${clear.id}): deleted ${clear.deletedMessageCount} messages, ${clear.deletedSubagentCount} subagents, ${clear.deletedPeerThreadCount} peer threads`,
      );
    });
  session
    .command("events")
    .description("durable session events (sessionCleared) after a cursor, oldest first")
    .option("--after <id>", "the cursor: the last event id already seen", "0")
    .option("--session <id>", "only this session's events")
    .option("--limit <n>", "at most this many", "100")
    .action(async (opts: { after: string; session?: string; limit: string }) => {
      const page = await client().get<{
        events: { id: string; kind: string; sessionId: string; at: string; data: Record<string, unknown> }[];
        next: string;
      }>("/v1/events", {
        after: opts.after,
        session: opts.session,
        limit: opts.limit,
      });
      print(page, () =>
        [
          table(
            ["ID", "AT", "KIND", "SESSION", "DATA"],
            page.events.map((e) => [e.id, e.at, e.kind, e.sessionId, shorten(JSON.stringify(e.data), 80)]),
          ),
          `next cursor: ${page.next}`,
        ].join("\n"),
      );
    });

  const notify = program
    .command("notify")
    .description("set a timer that wakes a session's agent with a note (notify_session_in)")
    .option("--session <id>", "the session to wake")
    .option("--in <duration>", "delay, e.g. 90s, 10m, 2h")
    .option("--message <text>", "the note the agent receives")
    .action(async (opts: { session?: string; in?: string; message?: string }) => {
      if (!opts.session || !opts.in || opts.message === undefined)
        throw new CommanderErrorLike("notify needs --session, --in and --message");
      const ms = parseDuration(opts.in);
      if (ms === null) throw new CommanderErrorLike(`--in: not a duration: "${opts.in}" (use e.g. 90s, 10m, 2h)`);
      const timer = await client().post<TimerView>("/v1/notify", {
        sessionId: opts.session,
        message: opts.message,
        delaySeconds: ms / 1000,
      });
      print(timer, () =>
        timer.status === "Cancelled"
          ? `notify ${timer.id} cancelled by ${timer.decidedBy}: ${timer.reason}`
          : `notify ${timer.id} set for ${timer.dueAt} (in ${timer.delaySeconds}s${timer.delaySeconds !== timer.requestedDelaySeconds ? `, asked ${timer.requestedDelaySeconds}s` : ""})`,
      );
    });
  notify
    .command("ls")
    .description("list notify timers, newest first")
    .option("--session <id>", "only this session's timers")
    .addOption(new Option("--status <status>", "only timers with this status").choices(NOTIFY_STATUSES))
    .option("--limit <n>", "at most this many", "50")
    .action(async (opts: { session?: string; status?: string; limit: string }) => {
      const { timers } = await client().get<{ timers: TimerView[] }>("/v1/notify", {
        session: opts.session,
        status: opts.status,
        limit: opts.limit,
      });
      print(timers, () =>
        table(
          ["ID", "SESSION", "DUE AT", "STATUS", "LATE MS", "BY", "MESSAGE / REASON"],
          timers.map((t) => [
            t.id,
            t.sessionId,
            t.dueAt,
            t.status,
            t.latenessMs,
            t.decidedBy ?? t.claimedBy,
            shorten(t.reason ?? t.messageDelivered ?? t.message, 60),
          ]),
        ),
      );
    });
  notify
    .command("show <id>")
    .description("show one notify timer")
    .action(async (id: string) => {
      const timer = await client().get<TimerView>(`/v1/notify/${encodeURIComponent(id)}`);
      print(timer, () =>
        Object.entries(timer)
          .map(([k, v]) => `${k.padEnd(22)} ${v ?? "-"}`)
          .join("\n"),
      );
    });
  notify
    .command("cancel <id>")
    .description("cancel a timer that has not come due")
    .action(async (id: string) => {
      const timer = await client().post<TimerView>(`/v1/notify/${encodeURIComponent(id)}/cancel`, {});
      print(timer, () => `cancelled notify ${timer.id}`);
    });

  const todo = program.command("todo").description("per-session todo lists (through todoAdded)");
  todo
    .command("add <texts...>")
    .description("add todos to a session")
    .requiredOption("--session <id>", "the session")
    .action(async (texts: string[], opts: { session: string }) => {
      const added = await client().post<{
        batch: { id: string; status: string; reason: string | null; decidedBy: string | null };
        todos: TodoView[];
      }>(`/v1/sessions/${encodeURIComponent(opts.session)}/todos`, { texts });
      print(added, () =>
        added.batch.status === "Added"
          ? table(
              ["ID", "TODO"],
              added.todos.map((t) => [t.id, t.text]),
            )
          : `batch ${added.batch.id} ${added.batch.status}${added.batch.decidedBy ? ` by ${added.batch.decidedBy}` : ""}: ${added.batch.reason}`,
      );
    });
  todo
    .command("ls")
    .description("list a session's open todos")
    .requiredOption("--session <id>", "the session")
    .addOption(
      new Option("--status <status>", "which todos").choices(["open", "done", "cancelled", "all"]).default("open"),
    )
    .action(async (opts: { session: string; status: string }) => {
      const { todos } = await client().get<{ todos: TodoView[] }>(
        `/v1/sessions/${encodeURIComponent(opts.session)}/todos`,
        { status: opts.status },
      );
      print(todos, () =>
        table(
          ["ID", "STATUS", "TODO", "CREATED"],
          todos.map((t) => [t.id, t.status, t.text, t.createdAt]),
        ),
      );
    });
  for (const [verb, description] of [
    ["done", "mark a todo done"],
    ["cancel", "cancel a todo"],
  ] as const) {
    todo
      .command(`${verb} <id>`)
      .description(description)
      .action(async (id: string) => {
        const closed = await client().post<TodoView>(`/v1/todos/${encodeURIComponent(id)}/${verb}`, {});
        print(closed, () => `todo ${closed.id} ${closed.status}: ${closed.text}`);
      });
  }

  const plugins = program.command("plugins").description("the plugin chain");
  plugins
    .command("ls")
    .description("list plugins in chain order, with their hooks and state")
    .action(async () => {
      const { plugins: list } = await client().get<{ plugins: PluginInfo[] }>("/v1/plugins");
      print(list, () =>
        table(
          ["NAME", "KIND", "ORDER", "STATE", "HOOKS", "FLAGS", "GRANTS", "ERROR"],
          list.map((p) => [
            p.name,
            p.kind,
            p.order,
            p.state,
            p.hooks.join(",") || "-",
            [p.required && "required", p.shadow && "shadow"].filter(Boolean).join(",") || "-",
            grantSummary(p.grants),
            shorten(p.error, 80),
          ]),
        ),
      );
    });

  plugins
    .command("decisions")
    .description("the decision log: what each handler that ran decided, newest first")
    .addOption(new Option("--hook <hook>", "only this hook").choices(HOOK_NAMES))
    .option("--plugin <name>", "only this plugin")
    .option("--subject <id>", "only decisions about this run, timer or session")
    .option("--limit <n>", "at most this many", "50")
    .action(async (opts: { hook?: string; plugin?: string; subject?: string; limit: string }) => {
      const result = await client().get<{ decisions: DecisionView[]; counts: Record<string, number> }>(
        "/v1/hook-decisions",
        {
          hook: opts.hook,
          plugin: opts.plugin,
          subject: opts.subject,
          limit: opts.limit,
        },
      );
      print(result, () =>
        [
          table(
            ["ID", "AT", "PLUGIN", "HOOK", "SUBJECT", "MS", "OUTCOME", "DETAIL"],
            result.decisions.map((d) => [
              d.id,
              d.at,
              d.plugin,
              d.hook,
              d.subjectId,
              d.durationMs,
              d.shadow ? `${d.outcome} (shadow)` : d.outcome,
              shorten(d.fields?.join(",") ?? d.reason, 70),
            ]),
          ),
          "",
          Object.entries(result.counts)
            .map(([k, v]) => `${k} ${v}`)
            .join(" · "),
        ].join("\n"),
      );
    });

  addExamples(program);
  return program;
}

interface Diagnosis {
  ok: boolean;
  overdueJobs: { id: string; name: string; nextFireAt: string; lateBySeconds: number }[];
  stuckRuns: { id: string; cronJobId: string; status: string; since: string; claimedBy: string }[];
  overdueTimers: { id: string; sessionId: string; dueAt: string }[];
  failingAgents: { agentId: string; failures: number; lastFailureAt: string; lastStatus: string }[];
  plugins: { name: string; state: string; error: string | null }[];
  clockSkewMs: number;
  schedulerArmed: boolean;
}

interface DecisionView {
  id: string;
  at: string;
  plugin: string;
  hook: string;
  subjectId: string | null;
  durationMs: number;
  outcome: string;
  fields: string[] | null;
  reason: string | null;
  shadow: boolean;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("must be a positive integer");
  return n;
}

class CommanderErrorLike extends CommanderError {
  constructor(message: string) {
    super(2, "missiond.usage", message);
  }
}

/** --url / --socket / MISSIOND_SOCKET / the configured socket / systemd's runtime directory. */
function target(globals: GlobalOptions, io: CliIo, config: () => Config): Target {
  if (globals.url) return { url: globals.url, token: globals.token ?? io.env.MISSIOND_API_TOKEN ?? null };
  if (globals.socket) return { socketPath: globals.socket };
  const configured = config().socketPath;
  if (!existsSync(configured) && existsSync(SYSTEMD_SOCKET)) return { socketPath: SYSTEMD_SOCKET };
  return { socketPath: configured };
}
