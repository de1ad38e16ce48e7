// sessionClearing is the last chance to read a transcript before /new deletes it. This plugin
// keeps a short summary under "summary:<sessionId>" in its host.store: how many messages there
// were, who spoke, and the last few lines (each cut to 200 characters).

const keep = Number.isInteger(host.config.keep) && host.config.keep > 0 ? host.config.keep : 5;
const cut = (text) => (text.length > 200 ? `${text.slice(0, 199)}…` : text);

globalThis.middleware.sessionClearing = async (context) => {
  if (!host.session) return; // withheld (loop protection): nothing to read
  const messages = await host.session.conversation.read();
  const roles = {};
  for (const m of messages) roles[m.role] = (roles[m.role] ?? 0) + 1;
  await host.store.set(`summary:${context.sessionId}`, {
    agentId: context.agentId,
    messageCount: context.messageCount,
    subagentCount: context.subagentCount,
    peerThreadCount: context.peerThreadCount,
    trailingText: context.trailingText,
    roles,
    last: messages.slice(-keep).map((m) => `${m.role}: ${cut(m.text)}`),
  });
  host.log("info", `kept a summary of ${messages.length} messages of session ${context.sessionId}`);
};
