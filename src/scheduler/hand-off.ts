/**
 * Whether work claimed ahead of its moment is handed off in its claim (and waits for the moment
 * in the delivery worker), rather than at the moment: only within claim_ahead of it. A hand-off
 * counts the attempt; one that waited longer than that (a burst's slots, a wave of notes claimed
 * seconds ahead) would be closed Unknown by a crash in between instead of being delivered.
 * Without a claim_ahead (a caller that claims only what is due), always.
 */
export function handOffInClaim(moment: number, now: number, claimAheadMs: number | undefined): boolean {
  return moment - now <= (claimAheadMs ?? Infinity);
}
