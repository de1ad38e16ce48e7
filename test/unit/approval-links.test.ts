import { describe, expect, it } from "vitest";
import { readLink, signLink } from "../../src/approvals/links.ts";

const secret = Buffer.alloc(32, 7);
const now = Date.parse("2030-01-01T00:00:00Z");
const expires = now / 1000 + 600;

describe("approval links", () => {
  it("reads back the run, the decision and the expiry it was signed with", () => {
    const token = signLink(secret, { runId: "42", action: "reject", expires });
    expect(readLink(secret, token, now)).toEqual({ runId: "42", action: "reject", expires });
  });

  it("refuses a link whose run or decision was changed, or signed with another secret", () => {
    const token = signLink(secret, { runId: "42", action: "reject", expires });
    expect(readLink(secret, token.replace("reject", "approve"), now)).toEqual({
      refused: "the link's signature does not match",
    });
    expect(readLink(secret, token.replace(/^42/, "43"), now)).toMatchObject({ refused: /signature/ });
    expect(readLink(Buffer.alloc(32, 8), token, now)).toMatchObject({ refused: /signature/ });
    expect(readLink(secret, "not-a-link", now)).toEqual({ refused: "not an approval link" });
  });

  it("refuses a link once its window has ended", () => {
    const token = signLink(secret, { runId: "42", action: "approve", expires });
    expect(readLink(secret, token, expires * 1000)).toEqual({ refused: "the link has expired", expired: true });
  });
});
