/**
 * Work started in the background (a slot's chain, a timer's delivery, an observe-only hook) that
 * shutdown must wait for. A failure is reported to `onError`, never left unhandled.
 */
export class InFlight {
  private readonly work = new Set<Promise<void>>();

  add(work: Promise<unknown>, onError: (err: unknown) => void): void {
    const tracked: Promise<void> = work.then(() => {}, onError).finally(() => this.work.delete(tracked));
    this.work.add(tracked);
  }

  /** Resolves once nothing is left, including work added while waiting. */
  async drain(): Promise<void> {
    while (this.work.size > 0) await Promise.allSettled([...this.work]);
  }
}
