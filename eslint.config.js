// Typed lint: the rules that catch a daemon's classic bugs (a promise nobody awaits or catches,
// a promise passed where a callback's result is ignored, a switch that forgets a status).
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "node_modules/",
      "dist/",
      "ui/dist/",
      "drizzle/",
      "coverage/",
      "test/fixtures/",
      "test/security/fixtures/",
      "plugins/**/*.js",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": [
        "error",
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      "@typescript-eslint/switch-exhaustiveness-check": ["error", { considerDefaultExhaustiveForUnions: true }],
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
    },
  },
  // A daemon read in one sitting: small files, functions that fit a screen or two. The dashboard and
  // the test helpers are read the same way.
  {
    files: ["src/**/*.ts", "ui/**/*.ts", "test/helpers/**/*.ts"],
    rules: {
      "max-lines": ["error", { max: 400 }],
      "max-lines-per-function": ["error", { max: 120 }],
    },
  },
  // Test files share their worker's loaded modules (vitest.config.ts, isolate: false): a module mock
  // would reach the files after it, or miss a module an earlier file loaded. Seams are passed in.
  {
    files: ["test/**/*.ts", "plugins/**/*.test.ts"],
    rules: {
      "no-restricted-properties": [
        "error",
        ...["mock", "doMock", "unmock", "stubGlobal", "stubEnv"].map((property) => ({
          object: "vi",
          property,
          message: "test files share loaded modules (isolate: false): pass the seam in instead",
        })),
      ],
    },
  },
  { files: ["**/*.js"], ...tseslint.configs.disableTypeChecked },
  {
    files: ["bin/**/*.js", "bench/**/*.js"],
    languageOptions: { globals: { process: "readonly", console: "readonly" } },
  },
  // Declaring globals in a .d.ts needs `var`.
  { files: ["**/*.d.ts"], rules: { "no-var": "off" } },
);
