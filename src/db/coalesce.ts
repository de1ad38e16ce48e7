/**
 * Commits items in batches: everything queued in the same turn of the event loop goes to one
 * `commit` call (a burst is one transaction, not one per item), or with `largest` to one call per
 * `largest` items in turn, each awaited before the next. A batch that fails is retried item by
 * item, so one bad item does not strand the others; each caller's promise settles with its own
 * item's outcome.
 */
export function coalescing<T>(commit: (items: T[]) => Promise<void>, largest = Infinity): (item: T) => Promise<void> {
  let queue: { item: T; done(err: Error | null): void }[] = [];
  const flush = async (batch: typeof queue): Promise<void> => {
    try {
      await commit(batch.map((b) => b.item));
      for (const b of batch) b.done(null);
    } catch (err) {
      if (batch.length > 1) {
        for (const b of batch) await flush([b]);
        return;
      }
      for (const b of batch) b.done(err as Error);
    }
  };
  return (item) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ item, done: (err) => (err ? reject(err) : resolve()) });
      if (queue.length === 1) {
        setImmediate(() => {
          const batch = queue;
          queue = [];
          void (async () => {
            for (let i = 0; i < batch.length; i += largest) await flush(batch.slice(i, i + largest));
          })();
        });
      }
    });
}
