import { describe, expect, it } from "vitest";
import { addedGrants, narrowGrants } from "../../src/plugins/consent.ts";
import type { Grants, GrantsView } from "../../src/plugins/grants.ts";

const accepted: GrantsView = {
  permissions: ["log", "fetch", "fs", "env"],
  fetch: ["api.example.com"],
  fs: [{ path: "/srv/data", access: "read" }],
  env: ["TOKEN"],
};

const asked: Grants = {
  simple: new Set(["log", "store"]),
  fetch: ["api.example.com", "evil.example.com"],
  fs: [
    { path: "/srv/data", access: "read-write" },
    { path: "/etc", access: "read" },
  ],
  env: ["TOKEN", "SECRET"],
};

describe("consent: grants compared as sets", () => {
  it("names each grant beyond the accepted ones", () => {
    const view: GrantsView = {
      permissions: ["log", "store", "fetch", "fs", "env"],
      fetch: [...asked.fetch!],
      fs: [...asked.fs],
      env: [...asked.env],
    };
    expect(addedGrants(accepted, view)).toEqual([
      "store",
      "fetch=evil.example.com",
      "fs=/srv/data(rw)",
      "fs=/etc(r)",
      "env=SECRET",
    ]);
    expect(addedGrants(accepted, accepted)).toEqual([]);
    // Asking for less is not asking for more.
    expect(addedGrants(accepted, { permissions: ["log"], fetch: [], fs: [], env: [] })).toEqual([]);
  });

  it("narrows the manifest's grants to their intersection with the accepted ones", () => {
    expect(narrowGrants(asked, accepted)).toEqual({
      simple: new Set(["log"]),
      fetch: ["api.example.com"],
      fs: [{ path: "/srv/data", access: "read" }],
      env: ["TOKEN"],
    });
  });
});
