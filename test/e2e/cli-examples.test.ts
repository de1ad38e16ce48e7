import { missingProgram, prerequisite } from "../helpers/prerequisite.ts";
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { globalAgent } from "node:https";
import { connect, type AddressInfo } from "node:net";
import { join } from "node:path";
import { createServer as createTlsServer, type Server } from "node:tls";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listAlerts, openAlert } from "../../src/alerts/queries.ts";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import { EXAMPLES } from "../../src/cli/examples.ts";
import { runCli } from "../../src/cli/program.ts";
import { loadConfig } from "../../src/config/load.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { startTestDaemon, testProbe } from "../helpers/daemon.ts";
import { SERVER_URL, backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { freePort } from "../helpers/net.ts";
import { MAIN } from "../helpers/process.ts";
import { removeTempDir, tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * Every example `missiond <command> --help` shows, run as written against a real daemon, in an
 * order where each finds what it names (agent a1, job 12, session s-42, timer 17, todos 31 and 32,
 * team-jobs.toml and ./quiet-hours in the working directory, the jobs.toml `cron export` writes).
 */

/** The examples this test does not run, and why. */
const NOT_RUN: Record<string, string> = {
  ...(SERVER_URL
    ? {}
    : Object.fromEntries(
        [
          "DATABASE_URL=postgres://missiond@db/missiond missiond migrate",
          "DATABASE_URL=postgres://missiond@db/missiond missiond serve --config /etc/missiond/config.toml",
        ].map((example) => [example, "needs a Postgres server: runs when the tests do (DATABASE_URL)"]),
      )),
  // The examples' daemon is running, and backup is refused while one holds the embedded database:
  // test/chaos/backup-embedded.test.ts runs it on a stopped daemon's state and restores from it.
  ...Object.fromEntries(EXAMPLES.backup!.map((example) => [example, "needs the embedded daemon stopped"])),
};

/** The order the commands' examples run in: each leaves what a later one names. */
const ORDER = [
  ...["", "doctor", "config", "config check", "migrate"],
  ...["agent set", "agent", "agent ls"],
  ...["cron add", "cron", "cron ls", "cron show", "cron preview", "cron pause", "cron resume", "cron trigger"],
  ...["cron token", "cron token create", "cron token ls", "cron token rm"],
  ...["cron backfill", "cron skip", "cron edit", "cron history", "cron export", "apply"],
  ...["runs", "runs ls", "runs show", "runs export", "runs approve", "runs reject"],
  ...["session add", "session", "session ls", "session say", "session messages", "session clear"],
  ...["notify", "notify ls", "notify show", "notify cancel", "todo add", "todo", "todo ls", "todo done"],
  ...["todo cancel", "session events", "session rm"],
  ...["plugins install", "plugins", "plugins reload", "plugins approve", "plugins ls", "plugins decisions"],
  ...["plugins disable", "plugins enable", "plugins rm", "alerts", "alerts ls", "alerts ack"],
  ...["agent rm", "cron rm", "serve", "backup"],
];

interface World {
  daemon: Daemon;
  api: ApiClient;
  cwd: string;
  pluginDir: string;
}

/**
 * What an example needs that the examples before it used up, keyed "command: example"; it may
 * answer words of the example to replace (an id already consumed by an earlier example).
 */
const PREPARE: Record<string, (w: World) => Promise<Record<string, string> | void>> = {
  // A job made by hand; job 12 is by now managed by the applied jobs.toml (removed with --force next).
  "cron rm: missiond cron rm 13": async ({ api }) => {
    const job = await api.post<{ id: string }>("/v1/cron-jobs", {
      name: "by-hand",
      agentId: "a1",
      every: "1h",
      prompt: "p",
    });
    return { "13": job.id };
  },
  // The run cron trigger made.
  "runs show: missiond runs show 1207": async ({ api }) => ({ "1207": await latestRun(api) }),
  "runs show: missiond runs show 1207 --json": async ({ api }) => ({ "1207": await latestRun(api) }),
  // A run of a job that requires approval, waiting for its decision.
  "runs approve: missiond runs approve 1207": async ({ api }) => ({ "1207": await awaitingRun(api) }),
  'runs reject: missiond runs reject 1207 --reason "not during the release freeze"': async ({ api }) => ({
    "1207": await awaitingRun(api),
  }),
  // The notify command's own examples cancelled timer 17 already.
  "notify cancel: missiond notify cancel 17": async ({ api }) => {
    const timer = await api.post<{ id: string }>("/v1/notify", { sessionId: "s-42", message: "m", delaySeconds: 600 });
    return { "17": timer.id };
  },
  // s-42 has open todos (the other example forces its removal); this one removes a session with none.
  "session rm: missiond session rm s-42": async ({ api }) => {
    const session = await api.post<{ id: string }>("/v1/sessions", { agentId: "a1" });
    return { "s-42": session.id };
  },
  // An alert open on job 12, as the evaluator opens one after its failures; ack takes its id.
  "alerts ls: missiond alerts ls --open": async ({ daemon }) => void (await openTestAlert(daemon)),
  "alerts ack: missiond alerts ack 7": async ({ daemon }) => ({ "7": await openTestAlert(daemon, "missed") }),
  "alerts: missiond alerts ls --open": async ({ daemon }) => void (await openTestAlert(daemon)),
  "alerts: missiond alerts ack 7": async ({ daemon }) => ({ "7": await openTestAlert(daemon) }),
  // plugins install's examples installed it; an operator removes its folder to install it anew.
  "plugins: missiond plugins install cron-sentinel --yes": async ({ pluginDir }) =>
    void rmSync(join(pluginDir, "cron-sentinel"), { recursive: true }),
};

/** Opens (or finds open) an alert of `kind` on job 12; its id. Each ack example acks a kind of its own. */
async function openTestAlert(daemon: Daemon, kind: "failing" | "missed" = "failing"): Promise<string> {
  const db = daemon.services.database.db;
  const now = new Date();
  const opened = await openAlert(db, {
    kind,
    severity: "critical",
    cronJobId: 12n,
    jobName: "nightly",
    agentId: "a1",
    summary: "nightly failed 3 times in a row",
    details: {},
    openedAt: now,
    notifiedAt: now,
  });
  if (opened) return String(opened.id);
  const open = await listAlerts(db, { open: true, limit: 10 });
  return String(open.find((a) => a.kind === kind)!.id);
}

/** Triggers a run of a job that requires approval and waits until it awaits one; its id. */
async function awaitingRun(api: ApiClient): Promise<string> {
  const { jobs } = await api.get<{ jobs: { id: string; name: string }[] }>("/v1/cron-jobs");
  const job =
    jobs.find((j) => j.name === "gated") ??
    (await api.post<{ id: string }>("/v1/cron-jobs", {
      name: "gated",
      agentId: "a1",
      cron: "0 0 1 1 *",
      prompt: "p",
      approval: true,
    }));
  const run = await api.post<{ id: string }>(`/v1/cron-jobs/${job.id}/trigger`, {});
  return waitFor(async () => {
    const found = await api.get<{ status: string }>(`/v1/runs/${run.id}`);
    return found.status === "AwaitingApproval" ? run.id : null;
  }, "the run to await approval");
}

const latestRun = async (api: ApiClient) =>
  (await api.get<{ runs: { id: string }[] }>("/v1/runs", { limit: 1 })).runs[0]!.id;

/** Checks of what a command's examples did, beyond their exit code. */
const AFTER: Record<string, (w: World) => Promise<void>> = {
  "agent set": async ({ api }) => {
    const { agents } = await api.get<{ agents: { id: string; settings: Record<string, unknown> }[] }>("/v1/agents");
    const settings = Object.fromEntries(agents.map((a) => [a.id, a.settings]));
    expect(settings["ops-bot"]).toMatchObject({ executor: "webhook", url: "https://agents.internal/missions" });
    expect(settings.worker).toMatchObject({ argv: ["/usr/local/bin/run-agent", "--once"], timeout: 600_000 });
  },
  apply: async ({ api }) => {
    const { jobs } = await api.get<{ jobs: { name: string }[] }>("/v1/cron-jobs");
    expect(jobs.map((j) => j.name)).toEqual(expect.arrayContaining(["nightly", "pulse", "tick", "team-report"]));
  },
};

const TOKEN = "operator-token-of-the-test";
const SECRET = "webhook-secret-of-the-test";

const TEAM_JOBS = `[jobs.team-report]
agent = "a1"
every = "12h"
prompt = "summarise the team's day"
`;

// The webhook example's https URL is served with a certificate made by openssl.
const opensslMissing = prerequisite(missingProgram("openssl", ["openssl"]));

describe.skipIf(opensslMissing !== null)(
  `every --help example, run as written (${backendName})${opensslMissing ? ` (skipped: ${opensslMissing})` : ""}`,
  () => {
    let db: TestDatabase;
    let world: World;
    let front: TlsFront;
    const words: Record<string, string> = {};

    beforeAll(async () => {
      db = await freshDatabase();
      const port = await freePort();
      const toml = `listen = "127.0.0.1:${port}"\n[[api.tokens]]\nname = "ops"\nscope = "operator"\ntoken_env = "TOKEN"\n\n[agents.a1]\nexecutor = "log"\n`;
      const pluginDir = join(tempDir("plugins"), "installed");
      mkdirSync(pluginDir);
      const daemon = await startTestDaemon(db, { toml, env: { TOKEN }, pluginDirs: [pluginDir] });
      const cwd = tempDir("examples");
      world = { daemon, api: apiClient({ socketPath: daemon.config.socketPath }), cwd, pluginDir };
      front = await tlsFront(port);
      writeFixtures(cwd);
      await firstIds(daemon);
      Object.assign(words, {
        "https://missiond.internal:7878": front.url,
        "/etc/missiond/config.toml": join(cwd, "config.toml"),
        "/etc/missiond/jobs.toml": join(cwd, "jobs.toml"),
        "/run/missiond/missiond.sock": daemon.config.socketPath,
        ...(SERVER_URL ? { "postgres://missiond@db/missiond": db.url! } : {}),
      });
    });

    afterAll(async () => {
      await world?.daemon.stop();
      await front?.close();
      if (world) removeTempDir(world.daemon.config.stateDir);
      await db?.drop();
    });

    it("runs every command's examples, in an order that names each command once", () => {
      expect([...ORDER].sort()).toEqual(Object.keys(EXAMPLES).sort());
      const all = Object.entries(EXAMPLES).flatMap(([path, list]) => list.map((e) => `${path}: ${e}`));
      expect(Object.keys(PREPARE).filter((key) => !all.includes(key))).toEqual([]);
      expect(Object.keys(AFTER).filter((path) => !ORDER.includes(path))).toEqual([]);
      expect(Object.keys(NOT_RUN).filter((e) => !Object.values(EXAMPLES).flat().includes(e))).toEqual([]);
    });

    for (const path of ORDER)
      for (const example of EXAMPLES[path] ?? [])
        it.skipIf(example in NOT_RUN)(`${path || "missiond"}: ${example}`, async () => {
          const replaced = { ...words, ...(await PREPARE[`${path}: ${example}`]?.(world)) };
          const parsed = parseExample(example, { TOKEN, SECRET });
          const result = await runExample(world, parsed, replaced);
          expect(result.code, `${result.stderr}${result.stdout}`).toBe(0);
          checkOutput(world.cwd, parsed, result.stdout);
          if (example === EXAMPLES[path]!.at(-1)) await AFTER[path]?.(world);
        });

    it("reached the daemon's TCP listener through TLS for the --url example", () => {
      expect(front.connections()).toBeGreaterThan(0);
    });

    it("`missiond <command> --help | head`: exits 0, quietly, once the reader has gone", async () => {
      const child = spawn(process.execPath, [MAIN, "cron", "add", "--help"], { stdio: ["ignore", "pipe", "pipe"] });
      // The reader goes before the help is written, as `head` does once it has its lines.
      child.stdout.destroy();
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
      expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    });
  },
);

/** The example's command in-process, as a shell at a terminal whose person answers yes would run it. */
async function runExample(world: World, parsed: ParsedExample, words: Record<string, string>) {
  const swap = (word: string) => words[word] ?? word;
  const serving = parsed.argv[0] === "serve";
  const env: Record<string, string> = {
    // How the commands find the test's daemon; a daemon started by an example has a socket of its own.
    ...(serving ? {} : { MISSIOND_SOCKET: world.daemon.config.socketPath }),
    MISSIOND_LOG_LEVEL: "warn",
    TOKEN,
    SECRET,
    ...(SERVER_URL ? { DATABASE_URL: words["postgres://missiond@db/missiond"]! } : {}),
    ...Object.fromEntries(Object.entries(parsed.env).map(([k, v]) => [k, swap(v)])),
  };
  let stdout = "";
  let stderr = "";
  let signal: ((name: string) => void) | null = null;
  const running = runCli(parsed.argv.map(swap), {
    env,
    cwd: world.cwd,
    hostname: "test",
    probe: testProbe,
    stdinIsTty: true,
    confirm: async () => true,
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    onSignal: (handler) => void (signal = handler),
    forceExit: (c) => {
      throw new Error(`exit ${c}`);
    },
  });
  if (serving) await stopOnceServing(running, env, world.cwd, () => signal);
  return { code: await running, stdout, stderr };
}

/** Waits until the daemon `missiond serve` started answers on its socket, then sends it SIGTERM. */
async function stopOnceServing(
  running: Promise<number>,
  env: Record<string, string>,
  cwd: string,
  signal: () => ((name: string) => void) | null,
): Promise<void> {
  const config = loadConfig({ env, cwd, hostname: "test", pid: process.pid });
  const api = apiClient({ socketPath: config.socketPath });
  let ended = false;
  void running.finally(() => (ended = true));
  await waitFor(
    async () =>
      ended ||
      (await api.get("/healthz").then(
        () => true,
        () => false,
      )),
    "missiond serve to answer on its socket",
    40_000,
    100,
  );
  signal()?.("SIGTERM");
}

/** What the shell around the command does with its output: a file written, JSON read by jq or gzip. */
function checkOutput(cwd: string, parsed: ParsedExample, stdout: string): void {
  if (parsed.then === ">") {
    expect(stdout).not.toBe("");
    writeFileSync(join(cwd, parsed.rest[0]!), stdout);
  }
  if (parsed.then === "|") {
    const lines = parsed.rest[0] === "jq" ? [stdout] : stdout.split("\n").filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
  }
}

/** The files the examples name in their working directory, and the plugin folder they install. */
function writeFixtures(cwd: string): void {
  // The config file the examples name (/etc/missiond/config.toml): a daemon started with it serves
  // beside the test's, so it sets no TCP listener.
  writeFileSync(join(cwd, "config.toml"), '[agents.a1]\nexecutor = "log"\n');
  writeFileSync(join(cwd, "team-jobs.toml"), TEAM_JOBS);
  const plugin = join(cwd, "quiet-hours");
  mkdirSync(plugin);
  writeFileSync(
    join(plugin, "plugin.json"),
    JSON.stringify({ name: "quiet-hours", version: "1.0.0", description: "notes it sees", permissions: ["log"] }),
  );
  writeFileSync(
    join(plugin, "index.js"),
    'globalThis.middleware.notifyDelivered = async (context) => void host.log("info", `note ${context.timerId}`);\n',
  );
}

/** The first job, timer and todo get the ids the examples name. */
async function firstIds(daemon: Daemon): Promise<void> {
  const db = daemon.services.database.db;
  await db.execute(sql`alter table cron_jobs alter column id restart with 12`);
  await db.execute(sql`alter table notify_timers alter column id restart with 17`);
  await db.execute(sql`alter table todos alter column id restart with 31`);
}

interface TlsFront {
  url: string;
  connections(): number;
  close(): Promise<void>;
}

/**
 * https:// in front of the daemon's TCP listener, with a certificate this process trusts: the
 * remote example's host is the only word of it replaced.
 */
async function tlsFront(port: number): Promise<TlsFront> {
  const dir = tempDir("tls");
  const [key, cert] = [join(dir, "key.pem"), join(dir, "cert.pem")];
  const subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"];
  const args = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1"];
  execFileSync("openssl", [...args, ...subject], { stdio: "ignore" });
  globalAgent.options.ca = readFileSync(cert);
  let connections = 0;
  const server: Server = createTlsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (socket) => {
    connections++;
    const upstream = connect(port, "127.0.0.1");
    socket.pipe(upstream).pipe(socket);
    socket.on("error", () => upstream.destroy());
    upstream.on("error", () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface ParsedExample {
  /** NAME=value words before the command. */
  env: Record<string, string>;
  /** The words after `missiond`. */
  argv: string[];
  /** The shell operator after the command, and the words after it. */
  then: "|" | "||" | ">" | null;
  rest: string[];
}

/** An example's line split as a shell splits it: quotes, $NAME, NAME=value first, then |, || or >. */
function parseExample(line: string, vars: Record<string, string>): ParsedExample {
  const tokens: ({ word: string } | { op: string })[] = [];
  let word: string | null = null;
  let quote: string | null = null;
  const flush = () => {
    if (word !== null) tokens.push({ word });
    word = null;
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "$" && quote !== "'") {
      const name = /^[A-Za-z_]\w*/.exec(line.slice(i + 1))?.[0] ?? "";
      if (vars[name] === undefined) throw new Error(`${line}: $${name} is not set`);
      word = (word ?? "") + vars[name];
      i += name.length;
    } else if (quote) {
      if (c === quote) quote = null;
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= "";
    } else if (c === " ") flush();
    else if (c === "|" || c === ">") {
      flush();
      const op = line[i + 1] === c ? c + c : c;
      tokens.push({ op });
      i += op.length - 1;
    } else word = (word ?? "") + c;
  }
  if (quote) throw new Error(`${line}: unterminated ${quote}`);
  flush();
  const at = tokens.findIndex((t) => "op" in t);
  const command = (at < 0 ? tokens : tokens.slice(0, at)).map((t) => (t as { word: string }).word);
  const env: Record<string, string> = {};
  while (/^[A-Za-z_]\w*=/.test(command[0] ?? "")) {
    const [name, ...value] = command.shift()!.split("=");
    env[name!] = value.join("=");
  }
  if (command.shift() !== "missiond") throw new Error(`${line}: not a missiond command`);
  const then = at < 0 ? null : ((tokens[at] as { op: string }).op as ParsedExample["then"]);
  const rest = at < 0 ? [] : tokens.slice(at + 1).flatMap((t) => ("word" in t ? [t.word] : []));
  return { env, argv: command, then, rest };
}
