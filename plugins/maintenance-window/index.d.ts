// Types of the helpers index.js exports (used by its tests).
export function compileWindows(config: unknown): unknown[];
export function windowAt(windows: unknown[], instant: number): { label: string; until: number } | null;
