/**
 * Whether work claimed ahead of its moment is handed off in its claim (and waits for the moment
 * in the delivery worker), rather than at the moment: only within claim_ahead of it. A hand-off
 * counts the attempt; one that waited longer than that (a burst's slots, a wave of notes claimed
 * seconds ahead) would be closed Unknown by a crash in between instead of being delivered.
 * Without a claim_ahead (a caller that claims only what is due), always. `burstSlackMs`: see
 * `burstSlack`.
 */
export function handOffInClaim(
  moment: number,
  now: number,
  claimAheadMs: number | undefined,
  burstSlackMs = 0,
): boolean {
  return moment - now <= (claimAheadMs ?? Infinity) + burstSlackMs;
}

/**
 * The scheduler hands a burst's keys over with more lead than claim_ahead, 1 ms more for every 3
 * keys sharing the moment, so that all of them are claimed in time. Those with up to claim_ahead
 * more still count as claimed ahead for a cron slot: 200 per-second jobs due together were
 * otherwise claimed 250–316 ms ahead, most beyond claim_ahead, and handed off at their moment, a
 * transaction on the path to the agent (webhook received at a median of 77–104 ms against 22–30
 * ms with this slack, measured).
 */
export const burstSlack = (claimAheadMs: number | undefined): number => claimAheadMs ?? 0;
