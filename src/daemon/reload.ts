import type { Logger } from "../log.ts";
import type { LoadReport, Plugins } from "../plugins/service.ts";

/** What `plugins reload`, POST /v1/plugins/reload and SIGHUP answer. */
export interface ReloadReport extends LoadReport {
  /** Reload hooks that failed (each is logged too); the plugins are swapped all the same. */
  hookErrors: { hook: string; error: string }[];
}

/** Work re-applied on each reload after the plugins are swapped, e.g. re-reading a jobs file. */
export type ReloadHook = (report: LoadReport) => Promise<void> | void;

/**
 * One reload at a time: the plugin set is loaded anew and swapped into the chain, then each
 * registered hook runs in registration order. A hook that throws is reported, not fatal: the
 * daemon keeps running on what did reload.
 */
export class Reloader {
  private readonly hooks: { name: string; run: ReloadHook }[] = [];
  private readonly log: Logger;
  private running: Promise<unknown> = Promise.resolve();

  constructor(log: Logger) {
    this.log = log.child({ component: "reload" });
  }

  /** Registers work to do on every reload (configuration that is re-read, such as `jobs_files`). */
  add(name: string, run: ReloadHook): void {
    this.hooks.push({ name, run });
  }

  reload(plugins: Plugins): Promise<ReloadReport> {
    const next = this.running.then(
      () => this.run(plugins),
      () => this.run(plugins),
    );
    this.running = next;
    return next;
  }

  private async run(plugins: Plugins): Promise<ReloadReport> {
    const report = await plugins.reload();
    const hookErrors: ReloadReport["hookErrors"] = [];
    for (const hook of this.hooks) {
      try {
        await hook.run(report);
      } catch (err) {
        this.log.error({ err, hook: hook.name }, `reload hook ${hook.name} failed`);
        hookErrors.push({ hook: hook.name, error: (err as Error).message });
      }
    }
    return { ...report, hookErrors };
  }
}
