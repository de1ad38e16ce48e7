import { describe, expect, it } from "vitest";
import { createLogger, prettyDestination } from "../../src/log.ts";

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
