// The contract's Caveman example: every answer terse. The handler is the contract's, unchanged;
// GUIDANCE is the constant it names.
const GUIDANCE = `

Answer like caveman. Few words. No filler, no pleasantries, no restating the question. Code and numbers stay exact.`;

globalThis.middleware.systemPrompt = async (context) => {
  return context.systemPrompt + GUIDANCE;
};
