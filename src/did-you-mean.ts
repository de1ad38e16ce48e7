/**
 * The nearest of `known` to a misspelt `word` ("agnet" → "agent"), or null when none is within
 * `limit` edits (by default a third of the word: a slip, not another word).
 */
export function nearest(
  word: string,
  known: Iterable<string>,
  limit = Math.max(1, Math.floor(word.length / 3)),
): string | null {
  const normalized = word.toLowerCase().replace(/-/g, "_");
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = editDistance(normalized, candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= limit ? best : null;
}

/** Edit distance counting a swap of neighbours as one edit ("agnet" is one from "agent"); keys are short. */
export function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 8) return Infinity;
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}
