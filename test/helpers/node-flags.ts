/**
 * Node's flags for the test workers and for the daemons and commands the tests start.
 * `--liftoff-only`: V8 compiles the embedded database's WebAssembly with its baseline compiler only,
 * without optimising the hot functions again with TurboFan. A process on it otherwise spends about
 * half a second of CPU optimising that code in the background as it starts (a PGlite opened on the
 * template's data directory and asked one query: 0.90–1.08 s of process CPU, 0.40–0.42 s with the
 * flag), for queries a test's few hundred statements run too briefly to repay; in the workers, the
 * embedded suite used 330 s of CPU instead of 344 (four integration files: 36–38 s, not 40–43).
 */
export const WASM_BASELINE_FLAGS: readonly string[] = ["--liftoff-only"];
