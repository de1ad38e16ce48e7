import { describe, expect, it } from "vitest";
import { createLogger, prettyDestination } from "../../src/log.ts";
import { DrizzleQueryError } from "drizzle-orm/errors";

describe("log lines for people (--log-format pretty)", () => {
  it("reads time, level, [component] message, then the other fields on one line; secrets still redacted", () => {
    const lines: string[] = [];
    const log = createLogger("info", prettyDestination({ colorize: false, write: (line) => void lines.push(line) }));
    log.child({ component: "cron" }).info({ cronJobId: "7", apiToken: "s3cret" }, "fired");
    log.debug("not at info");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: \[cron\] fired \{"cronJobId":"7","apiToken":"\[redacted\]"\}\n$/,
    );
  });

  it("leaves out the component bracket for lines without one", () => {
    const lines: string[] = [];
    const log = createLogger("info", prettyDestination({ colorize: false, write: (line) => void lines.push(line) }));
    log.warn({ signal: "SIGTERM" }, "shutdown requested");
    expect(lines[0]).toMatch(/^\[[\d:.]+\] WARN: shutdown requested \{"signal":"SIGTERM"\}\n$/);
  });
});

describe("errors in log lines", () => {
  it("clips a failed query's statement and counts its parameters instead of printing them", () => {
    const lines: string[] = [];
    const sink = { write: (line: string) => void lines.push(line) };
    const log = createLogger("info", sink);
    const ids = Array.from({ length: 400 }, (_, i) => `$${i + 1}::bigint`).join(", ");
    const params = Array.from({ length: 400 }, (_, i) => `secret-prompt-${i}`);
    const cause = Object.assign(new Error("deadlock detected"), { code: "40P01" });
    const err = new DrizzleQueryError(`delete from cron_job_runs where id in (${ids})`, params, cause);
    log.error({ err, component: "pruner" }, "pruner pass failed");
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as { err: Record<string, unknown>; msg: string };
    expect(lines[0]!.length).toBeLessThan(6_000);
    expect(lines[0]).not.toContain("secret-prompt-");
    expect(line.err.params).toBe("400 parameters");
    expect(line.err.message).toMatch(/^Failed query: delete from cron_job_runs where id in \(\$1::bigint/);
    expect(line.err.message).toMatch(/… \(\d+ chars\)/);
    // The cause is still there to read, and the stack keeps its frames.
    expect(lines[0]).toContain("deadlock detected");
    expect(line.err.stack).toMatch(/\n\s+at /);
    expect(line.msg).toBe("pruner pass failed");
  });

  it("leaves a short error as pino prints it", () => {
    const lines: string[] = [];
    const log = createLogger("info", { write: (line: string) => void lines.push(line) });
    log.error({ err: new Error("no such job: 7") }, "failed");
    const line = JSON.parse(lines[0]!) as { err: { message: string; type: string } };
    expect(line.err).toMatchObject({ message: "no such job: 7", type: "Error" });
  });
});
