import { describe, expect, it } from "vitest";
import { findDaemon, socketCandidates } from "../../src/cli/discovery.ts";
import { UnreachableError } from "../../src/cli/client.ts";

describe("where the CLI looks for the daemon's socket", () => {
  it("in order: $MISSIOND_SOCKET, each folder up from the working one, $XDG_RUNTIME_DIR, the configured, the system", () => {
    const list = socketCandidates({
      env: { MISSIOND_SOCKET: "run/d.sock", XDG_RUNTIME_DIR: "/run/user/1000" },
      cwd: "/home/ann/proj/src",
      configured: "/srv/missiond/missiond.sock",
    });
    expect(list.map((c) => c.path)).toEqual([
      "/home/ann/proj/src/run/d.sock",
      "/home/ann/proj/src/.missiond/missiond.sock",
      "/home/ann/proj/.missiond/missiond.sock",
      "/home/ann/.missiond/missiond.sock",
      "/home/.missiond/missiond.sock",
      "/.missiond/missiond.sock",
      "/run/user/1000/missiond/missiond.sock",
      "/srv/missiond/missiond.sock",
      "/run/missiond/missiond.sock",
    ]);
  });

  it("names each place once, at its first position", () => {
    const list = socketCandidates({ env: {}, cwd: "/srv", configured: "/srv/.missiond/missiond.sock" });
    expect(list).toEqual([
      { path: "/srv/.missiond/missiond.sock", source: "working directory and up" },
      { path: "/.missiond/missiond.sock", source: "working directory and up" },
      { path: "/run/missiond/missiond.sock", source: "system service" },
    ]);
  });

  it("takes the first that answers, without trying the rest", async () => {
    const tried: string[] = [];
    const target = await findDaemon(
      [
        { path: "/a", source: "x" },
        { path: "/b", source: "y" },
        { path: "/c", source: "z" },
      ],
      async (path) => (tried.push(path), path === "/b" ? null : "nothing listening"),
    );
    expect(target).toEqual({ socketPath: "/b" });
    expect(tried).toEqual(["/a", "/b"]);
  });

  it("fails with every place and its reason when none answers", async () => {
    const found = findDaemon([{ path: "/a", source: "x" }], async () => "permission denied");
    await expect(found).rejects.toThrow(UnreachableError);
    await expect(found).rejects.toThrow(/looked in:\n {2}\/a \(x: permission denied\)\n/);
  });
});
