import { RUN_STATUSES, type RunStatus } from "../../../../src/db/schema/enums.ts";

/** Columns of the timeline: a range is cut into this many buckets. */
export const BUCKETS = 60;

/** The preset ranges, sliding with now, and their length in ms. */
export const RANGES: Record<string, number> = { "15m": 9e5, "1h": 3.6e6, "6h": 2.16e7, "24h": 8.64e7, "7d": 6.048e8 };

export interface Filter {
  job?: string | undefined;
  status?: RunStatus | undefined;
  /** A preset ("1h", sliding with now) or "custom" with from/to. */
  range: string;
  from?: string | undefined;
  to?: string | undefined;
}

/** [from, to) of the filter now. A preset's end is rounded up to a bucket, so cells stay put as it slides. */
export function rangeOf(filter: Filter, now = Date.now()): { from: string; to: string; sliding: boolean } {
  if (filter.range === "custom" && filter.from && filter.to)
    return { from: filter.from, to: filter.to, sliding: false };
  const length = RANGES[filter.range] ?? RANGES["1h"]!;
  const bucket = length / BUCKETS;
  const end = Math.ceil((now + 1) / bucket) * bucket;
  return { from: new Date(end - length).toISOString(), to: new Date(end).toISOString(), sliding: true };
}

/** The filter the address asks for; anything it does not understand falls back to the last hour of every job. */
export function readFilter(filter: Filter, params: URLSearchParams): void {
  filter.job = params.get("job") ?? undefined;
  const status = params.get("status");
  filter.status = (RUN_STATUSES as readonly string[]).includes(status ?? "") ? (status as RunStatus) : undefined;
  const range = params.get("range") ?? "1h";
  filter.range = range in RANGES || range === "custom" ? range : "1h";
  filter.from = params.get("from") ?? undefined;
  filter.to = params.get("to") ?? undefined;
  if (filter.range === "custom" && !(filter.from && filter.to)) filter.range = "1h";
}

/** The filter as the address keeps it (defaults left out). */
export const filterParams = (filter: Filter): Record<string, string | undefined> => ({
  job: filter.job,
  status: filter.status,
  range: filter.range === "1h" ? undefined : filter.range,
  from: filter.range === "custom" ? filter.from : undefined,
  to: filter.range === "custom" ? filter.to : undefined,
});
