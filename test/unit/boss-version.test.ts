import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BOSS_SUPPORTED, checkBossRelease, installedBoss } from "../../src/db/boss-tables.ts";

const ownPackage = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  dependencies: Record<string, string>;
};

describe("the pg-boss release check", () => {
  it("passes the pg-boss installed here", () => {
    expect(() => checkBossRelease(installedBoss())).not.toThrow();
  });

  it("passes a later release of the same major with the same schema", () => {
    expect(() => checkBossRelease({ version: "12.38.0", schema: BOSS_SUPPORTED.schema })).not.toThrow();
    expect(() => checkBossRelease({ version: "12.38.4", schema: BOSS_SUPPORTED.schema })).not.toThrow();
    expect(() => checkBossRelease({ version: "12.41.0", schema: BOSS_SUPPORTED.schema })).not.toThrow();
  });

  it("refuses another major, naming the installed and the supported versions", () => {
    expect(() => checkBossRelease({ version: "13.0.0", schema: BOSS_SUPPORTED.schema })).toThrow(
      `pg-boss 13.0.0 (schema ${BOSS_SUPPORTED.schema}) is installed, but missiond supports pg-boss ^12.38.0 with schema ${BOSS_SUPPORTED.schema}`,
    );
    expect(() => checkBossRelease({ version: "11.9.9", schema: BOSS_SUPPORTED.schema })).toThrow(/pg-boss 11\.9\.9/);
  });

  it("refuses an earlier release of the major", () => {
    expect(() => checkBossRelease({ version: "12.37.9", schema: BOSS_SUPPORTED.schema })).toThrow(/pg-boss 12\.37\.9/);
  });

  it("refuses a release whose schema differs, even within the range", () => {
    expect(() => checkBossRelease({ version: "12.39.0", schema: BOSS_SUPPORTED.schema + 1 })).toThrow(
      `pg-boss 12.39.0 (schema ${BOSS_SUPPORTED.schema + 1}) is installed`,
    );
  });

  it("refuses a version it cannot read", () => {
    expect(() => checkBossRelease({ version: "next", schema: BOSS_SUPPORTED.schema })).toThrow(/pg-boss next/);
  });

  it("supports the range package.json depends on", () => {
    expect(ownPackage.dependencies["pg-boss"]).toBe(BOSS_SUPPORTED.range);
    expect(BOSS_SUPPORTED.range).toBe(`^${BOSS_SUPPORTED.minimum.join(".")}`);
    expect(BOSS_SUPPORTED.major).toBe(BOSS_SUPPORTED.minimum[0]);
  });
});
