// How the daemon's Node is launched, wherever it is: bin/missiond.js, the systemd unit (a test
// holds it to these) and the benchmarks and soak, so the figures are what an operator gets.

/**
 * V8 grows its young generation to 128 MB under load and keeps it however idle the daemon is
 * afterwards. Capped at 8 MB a semi-space: at 1,000 runs a second the daemon spent 0.258–0.273 ms a
 * run (three runs) against 0.306–0.371 at 4 MB (five; each collection of a smaller young generation
 * moves more of a run's short-lived objects into the old one), for 158–165 MB of RSS under the load
 * against 154–159, and the soak at 300 runs a second held its RSS flat with either (+2.1 and +0.9
 * MB); at 16 MB the plugins' isolates, which take the same cap, grew theirs by 23 MB over the soak.
 * Under steady load V8 lets the old generation grow to up to four times what survives a full
 * collection before collecting again, and keeps those pages committed: at 200 runs a second on
 * Postgres, 30 MB live held up to 135 MB of heap and the RSS crept to 235 MB. Collecting once the
 * old generation is half again the live size holds the heap total at 55–58 MB under 100 runs a
 * second on Postgres (66–69 MB at twice the live size, 11 MB less RSS), for the same CPU (52 against
 * 55% of a core over 6 minutes) and no slower a start (ready in 524 against 517–627 ms, median of 5
 * each). The RSS follows the highest heap total V8 has reached, so a lower limit is also a smaller
 * step each time the live heap briefly rises. Set after the start instead (v8.setFlagsFromString),
 * the limit held less of that RSS back: the start's own growth stays committed.
 */
export const NODE_FLAGS = [
  "--max-semi-space-size=8",
  "--heap-growing-percent=50",
  "--expose-gc-as=missiondCollectGarbage",
];

/**
 * The name `--expose-gc-as` gives V8's collector, which src/main.ts hands to the daemon: once it is
 * quiet after its start it gives back what the start left committed (src/daemon/settle.ts).
 */
export const COLLECT_GLOBAL = NODE_FLAGS.find((flag) => flag.startsWith("--expose-gc-as=")).split("=")[1];

/**
 * glibc's malloc raises its mmap threshold each time a large block is freed, after which blocks of
 * that size come from its arenas and stay resident once freed. The embedded database's start (and
 * WebAssembly's compilation of it) frees such blocks: an idle daemon on it held 305 MB, 210 MB with
 * the threshold fixed. Setting the trim threshold, at glibc's own default, is what fixes it. An
 * operator's own value wins.
 */
export const MALLOC_ENV = { MALLOC_TRIM_THRESHOLD_: "131072" };
