/**
 * Waits for a condition by polling it (the daemon's own timers run for real; this only observes).
 * A falsy value or an empty array means "not yet". Fails with the last value seen, so a timeout
 * says what state things were in.
 */
export async function waitFor<T>(
  probe: () => Promise<T> | T,
  what: string,
  timeoutMs = 15_000,
  everyMs = 50,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await probe();
    if (last && !(Array.isArray(last) && last.length === 0)) return last as NonNullable<T>;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last value: ${JSON.stringify(last)}`);
}
