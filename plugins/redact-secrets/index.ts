// Redacts secrets from what the model sees (SSH output) and from what reaches people (replies).
// The sshCommandCompleted handler is the contract's example, unchanged.

globalThis.middleware.sshCommandCompleted = async (context) => {
  const redact = (s: string | null) => s?.replace(/AKIA[0-9A-Z]{16}/g, "[redacted AWS key]");
  return { output: redact(context.output), errorOutput: redact(context.errorOutput) };
};

// Beyond the contract's example: the same for replies, plus a few other well-known secret shapes.
const PATTERNS: [RegExp, string][] = [
  [/AKIA[0-9A-Z]{16}/g, "[redacted AWS key]"],
  [/\bgh[pousr]_[A-Za-z0-9]{36,}\b/g, "[redacted GitHub token]"],
  [/\bsk-[A-Za-z0-9_-]{20,}\b/g, "[redacted API key]"],
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g, "[redacted private key]"],
];

globalThis.middleware.assistantMessageOutbound = async (context) => {
  return PATTERNS.reduce((text, [pattern, replacement]) => text.replace(pattern, replacement), context.text);
};
