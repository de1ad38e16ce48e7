import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.ts";
import { sessionAttrs } from "../../src/db/client.ts";

const base = { cwd: "/srv/app", hostname: "host", pid: 42 };
const FAILOVER_URL = "postgres://missiond@10.0.0.1:5432,10.0.0.2:5432/missiond?target_session_attrs=read-write";

describe("a multi-host database URL", () => {
  it("is accepted as database_url, as postgres.js takes it", () => {
    const config = loadConfig({ ...base, env: { DATABASE_URL: FAILOVER_URL } });
    expect(config.databaseUrl).toBe(FAILOVER_URL);
  });

  it("a URL of another scheme is refused, naming the key and what is expected", () => {
    expect(() => loadConfig({ ...base, env: { DATABASE_URL: "mysql://db/missiond" } })).toThrow(
      /DATABASE_URL: "mysql" is not a Postgres URL: give postgres:\/\//,
    );
  });

  it("asks postgres.js for the primary where it says read-write, and leaves other URLs alone", () => {
    expect(sessionAttrs(FAILOVER_URL)).toEqual({ target_session_attrs: "primary" });
    expect(sessionAttrs("postgres://missiond@db/missiond?target_session_attrs=read-write&prepare=false")).toEqual({
      target_session_attrs: "primary",
    });
    expect(sessionAttrs("postgres://missiond@db/missiond")).toEqual({});
    expect(sessionAttrs("postgres://missiond@h1,h2/missiond?target_session_attrs=prefer-standby")).toEqual({});
  });
});
