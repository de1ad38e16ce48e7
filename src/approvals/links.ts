import { createHmac, timingSafeEqual } from "node:crypto";

/** What a link decides. */
export type LinkAction = "approve" | "reject";

export interface LinkClaim {
  runId: string;
  action: LinkAction;
  /** Epoch seconds after which the link is refused (the end of the run's window). */
  expires: number;
}

const mac = (secret: Buffer, payload: string) => createHmac("sha256", secret).update(payload).digest("base64url");

/**
 * `<run>.<action>.<expires>.<HMAC-SHA256 of the three>`: whoever holds the link may make that one
 * decision on that one run until it expires. Single use comes from the decision itself: it is a
 * conditional update from AwaitingApproval, so once either link (or the CLI) decided, both are spent.
 */
export function signLink(secret: Buffer, claim: LinkClaim): string {
  const payload = `${claim.runId}.${claim.action}.${claim.expires}`;
  return `${payload}.${mac(secret, payload)}`;
}

/** The link's claim, or why it is refused (unsigned, altered, malformed or expired). */
export function readLink(
  secret: Buffer,
  token: string,
  nowMs: number,
): LinkClaim | { refused: string; expired?: true } {
  const parts = token.split(".");
  if (parts.length !== 4) return { refused: "not an approval link" };
  const [runId, action, expires, signature] = parts as [string, string, string, string];
  const expected = Buffer.from(mac(secret, `${runId}.${action}.${expires}`));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { refused: "the link's signature does not match" };
  if (!/^\d+$/.test(runId) || (action !== "approve" && action !== "reject") || !/^\d+$/.test(expires))
    return { refused: "not an approval link" };
  if (Number(expires) * 1000 <= nowMs) return { refused: "the link has expired", expired: true };
  return { runId, action, expires: Number(expires) };
}
