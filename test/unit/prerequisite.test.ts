import { describe, expect, it } from "vitest";
import {
  hiddenForTest,
  missingProgram,
  prerequisite,
  pythonMissing,
  pythonModuleMissing,
} from "../helpers/prerequisite.ts";

describe("a test's prerequisite", () => {
  it("is missing when the program is not on PATH or at its path, named with its Debian package", () => {
    expect(missingProgram("nosuch-package", ["nosuch-program-xyz"])).toBe(
      "nosuch-program-xyz not found (Debian package nosuch-package)",
    );
    expect(missingProgram("nosuch", ["/nonexistent/bin/x"])).toBe(
      "/nonexistent/bin/x not found (Debian package nosuch)",
    );
    // sh is on every machine the suite runs on.
    expect(missingProgram("dash", ["sh"])).toBeNull();
    expect(missingProgram("dash", ["sh"], { PATH: "/nonexistent" })).toBe("sh not found (Debian package dash)");
  });

  it("can be hidden by MISSIOND_TEST_HIDE, so a machine that has it checks the skip", () => {
    const env = { ...process.env, MISSIOND_TEST_HIDE: "chromium, python3-httpx,dash" };
    expect(hiddenForTest("python3-httpx", env)).toBe(true);
    expect(hiddenForTest("python3", env)).toBe(false);
    expect(missingProgram("dash", ["sh"], env)).toBe("sh hidden by MISSIOND_TEST_HIDE (Debian package dash)");
    expect(pythonModuleMissing("httpx", "python3-httpx", env)).toMatch(/python3-httpx/);
    expect(pythonMissing({ ...process.env, MISSIOND_TEST_HIDE: "python3" })).toMatch(
      /hidden by MISSIOND_TEST_HIDE \(Debian package python3\)$/,
    );
  });

  it("names a Python module the interpreter cannot import, with its package", () => {
    if (pythonMissing()) return expect(pythonModuleMissing("json", "python3")).toBe(pythonMissing());
    expect(pythonModuleMissing("json", "python3")).toBeNull();
    expect(pythonModuleMissing("nosuch_module_xyz", "python3-nosuch")).toBe(
      "python3 cannot import nosuch_module_xyz (Debian package python3-nosuch)",
    );
  });

  it("skips outside CI and fails under CI=true", () => {
    const ci = process.env.CI;
    try {
      delete process.env.CI;
      expect(prerequisite("x not found")).toBe("x not found");
      expect(prerequisite(null)).toBeNull();
      process.env.CI = "true";
      expect(() => prerequisite("x not found")).toThrow("CI must provide this test's prerequisite: x not found");
      expect(prerequisite(null)).toBeNull();
    } finally {
      if (ci === undefined) delete process.env.CI;
      else process.env.CI = ci;
    }
  });
});
