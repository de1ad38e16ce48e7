import { describe, expect, it } from "vitest";
import { Lifecycle, type Step } from "../../src/daemon/lifecycle.ts";

function recording() {
  const events: string[] = [];
  const step = (name: string, options: { failStart?: boolean; failStop?: boolean; holds?: boolean } = {}): Step => ({
    name,
    async start() {
      events.push(`start ${name}`);
      if (options.failStart) throw new Error(`${name} cannot start`);
      if (options.holds === false) return;
      return () => {
        events.push(`stop ${name}`);
        if (options.failStop) throw new Error(`${name} cannot stop`);
      };
    },
  });
  return { events, step };
}

describe("lifecycle steps", () => {
  it("stops the started steps last first, skipping those that hold nothing", async () => {
    const { events, step } = recording();
    const lifecycle = new Lifecycle();
    await lifecycle.start([step("a"), step("b", { holds: false }), step("c")]);
    await lifecycle.stop();
    expect(events).toEqual(["start a", "start b", "start c", "stop c", "stop a"]);
  });

  it("a step that fails to start leaves the earlier ones to stop and the later ones unstarted", async () => {
    const { events, step } = recording();
    const lifecycle = new Lifecycle();
    await expect(lifecycle.start([step("a"), step("b", { failStart: true }), step("c")])).rejects.toThrow(
      "b cannot start",
    );
    await lifecycle.stop();
    expect(events).toEqual(["start a", "start b", "stop a"]);
  });

  it("a failing stop does not keep the others from stopping, and its error is reported", async () => {
    const { events, step } = recording();
    const lifecycle = new Lifecycle();
    await lifecycle.start([step("a"), step("b", { failStop: true }), step("c")]);
    await expect(lifecycle.stop()).rejects.toThrow("b cannot stop");
    expect(events.slice(3)).toEqual(["stop c", "stop b", "stop a"]);
  });

  it("stopping twice releases each step once", async () => {
    const { events, step } = recording();
    const lifecycle = new Lifecycle();
    await lifecycle.start([step("a")]);
    await lifecycle.stop();
    await lifecycle.stop();
    expect(events).toEqual(["start a", "stop a"]);
  });

  it("announces a step's status before it starts", async () => {
    const seen: string[] = [];
    const lifecycle = new Lifecycle({
      onStatus: (detail) => seen.push(detail),
      onStep: (n, p) => seen.push(`${p} ${n}`),
    });
    await lifecycle.start([{ name: "db", status: "opening the database", start: async () => undefined }]);
    expect(seen).toEqual(["opening the database", "start db"]);
  });
});
