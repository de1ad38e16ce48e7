import { createDaemon, type Daemon } from "../daemon/daemon.ts";
import type { Config } from "../config/load.ts";
import { openDatabase } from "../db/client.ts";
import { lockDataDir } from "../db/lock.ts";
import { migrate } from "../db/migrate.ts";
import { createLogger, prettyDestination, type LogFormat } from "../log.ts";
import { openSdNotify } from "../systemd/sd-notify.ts";
import { EXIT, type CliIo } from "./io.ts";

/**
 * `missiond serve`: runs until SIGTERM/SIGINT; a second signal forces an immediate exit. SIGHUP
 * reloads the plugins (and never ends the process). Under
 * systemd (`NOTIFY_SOCKET` set) it reports STATUS=, READY=1, WATCHDOG=1 and STOPPING=1.
 */
export async function serve(config: Config, io: CliIo, logFormat?: LogFormat): Promise<number> {
  const log = createLogger(config.logLevel, logDestination(io, logFormat));
  for (const warning of config.warnings) log.warn({ component: "config" }, warning);
  const systemd = await openSdNotify(io.env, io.probe.pid, log.child({ component: "systemd" }));
  try {
    return await run(
      config,
      io,
      createDaemon(config, { probe: io.probe, log, onState: systemd?.onState, env: io.env }),
    );
  } finally {
    systemd?.close();
  }
}

/** Pretty lines at a terminal, JSON everywhere else (journald, files, pipes), unless told. */
function logDestination(io: CliIo, format: LogFormat | undefined) {
  const pretty = format ? format === "pretty" : io.stdoutIsTty === true;
  return pretty ? prettyDestination({ colorize: io.stdoutIsTty === true }) : undefined;
}

async function run(config: Config, io: CliIo, daemon: Daemon): Promise<number> {
  let signals = 0;
  let resolveStopped!: (code: number) => void;
  const stopped = new Promise<number>((resolve) => (resolveStopped = resolve));
  io.onSignal((signal) => {
    signals++;
    if (signals > 1) {
      daemon.log.warn({ signal }, "second signal: exiting now without draining");
      io.forceExit(EXIT.ERROR);
      return;
    }
    daemon.log.info({ signal }, "shutdown requested");
    // A drain that overruns its budget must not outlive systemd's patience; one that ended in time
    // clears it (serve run in-process, as the CLI's tests do, outlives its stop).
    const overrun = setTimeout(() => {
      daemon.log.error("shutdown exceeded its budget; exiting");
      io.forceExit(EXIT.ERROR);
    }, config.shutdown.drainBudgetMs + 2_000).unref();
    daemon
      .stop()
      .finally(() => clearTimeout(overrun))
      .then(
        () => resolveStopped(EXIT.OK),
        (err) => {
          daemon.log.error({ err }, "shutdown failed");
          resolveStopped(EXIT.ERROR);
        },
      );
  });
  io.onHangup?.(() => reloadOnHangup(daemon));
  try {
    await daemon.start();
  } catch (err) {
    io.stderr(`missiond: ${(err as Error).message}\n`);
    return EXIT.ERROR;
  }
  return stopped;
}

/** SIGHUP: reload and log the outcome; a reload that fails is logged, the daemon runs on. */
function reloadOnHangup(daemon: Daemon): void {
  const log = daemon.log.child({ component: "reload", signal: "SIGHUP" });
  if (daemon.state !== "running") {
    log.warn(`SIGHUP ignored: the daemon is ${daemon.state}`);
    return;
  }
  log.info("reload requested");
  daemon.reload().then(
    (report) => {
      const failed = report.failed.map((f) => f.error);
      const summary = `plugins reloaded: generation ${report.generation}, ${report.loaded.length} loaded, ${failed.length} failed`;
      const fields = { generation: report.generation, loaded: report.loaded.map((p) => p.name), failed };
      if (failed.length > 0 || report.hookErrors.length > 0)
        log.warn({ ...fields, hookErrors: report.hookErrors }, summary);
      else log.info(fields, summary);
    },
    (err: unknown) => log.error({ err }, "reload failed; the previous plugins stay active"),
  );
}

/** `missiond migrate`: applies migrations directly to the database and exits. */
export async function migrateOnly(config: Config, io: CliIo, logFormat?: LogFormat): Promise<number> {
  const log = createLogger(config.logLevel, logDestination(io, logFormat));
  const release = config.databaseUrl ? () => {} : lockDataDir(config.stateDir, config.instanceName, io.probe);
  try {
    const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
    try {
      for (const c of await migrate(database))
        log.info({ table: c.table, rows: c.rows, partitions: c.partitions }, "ledger table partitioned by day");
    } finally {
      await database.close();
    }
    log.info({ database: database.kind }, "migrations applied");
    io.stdout("migrations applied\n");
    return EXIT.OK;
  } finally {
    release();
  }
}
