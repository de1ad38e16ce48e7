export declare const NODE_FLAGS: readonly string[];
export declare const COLLECT_GLOBAL: string;
export declare const MALLOC_ENV: Readonly<Record<string, string>>;
