import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lockDataDir } from "../../src/db/lock.ts";
import { tempDir } from "../helpers/tmp.ts";

const dir = () => tempDir("lock");

describe("the embedded data directory lock", () => {
  it("refuses a second holder while the first is alive, naming it", () => {
    const state = dir();
    const release = lockDataDir(state, "first", { pid: 100, isAlive: () => true });
    expect(() => lockDataDir(state, "second", { pid: 200, isAlive: () => true })).toThrow(
      /in use by missiond pid 100 \(first, since /,
    );
    release();
    expect(existsSync(join(state, "missiond.lock"))).toBe(false);
  });

  it("takes over a lock whose owner is dead", () => {
    const state = dir();
    writeFileSync(
      join(state, "missiond.lock"),
      JSON.stringify({ pid: 100, instance: "crashed", since: "2026-01-01T00:00:00Z" }),
    );
    const release = lockDataDir(state, "second", { pid: 200, isAlive: (pid) => pid !== 100 });
    expect(JSON.parse(readFileSync(join(state, "missiond.lock"), "utf8"))).toMatchObject({
      pid: 200,
      instance: "second",
    });
    expect(existsSync(join(state, "missiond.lock.takeover"))).toBe(false);
    release();
  });

  it("does not release a lock that another process holds", () => {
    const state = dir();
    const release = lockDataDir(state, "first", { pid: 100, isAlive: () => true });
    writeFileSync(join(state, "missiond.lock"), JSON.stringify({ pid: 300, instance: "other", since: "x" }));
    release();
    expect(existsSync(join(state, "missiond.lock"))).toBe(true);
  });
});
