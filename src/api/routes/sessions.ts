import {
  appendMessagesInput,
  clearInput,
  createSessionInput,
  eventsQuery,
  readMessagesQuery,
  relationInput,
  removeQuery,
} from "../../sessions/input.ts";
import { idParams, sessionParams } from "../params.ts";
import { route } from "../route.ts";
import {
  appendedAnswer,
  clearView,
  eventPage,
  messageList,
  sessionList,
  sessionView,
  sessionWithCounts,
} from "../../sessions/answers.ts";

/** Sessions, their transcripts and relations, their clears (`/new`) and the durable event feed. */
export const sessionRoutes = [
  route({
    method: "POST",
    url: "/v1/sessions",
    scope: "agent",
    reaches: [{ agent: "body.agentId" }],
    tag: "sessions",
    summary: "Create a session",
    body: createSessionInput,
    status: 201,
    ok: { 201: { description: "The session", schema: sessionView } },
    errors: [409],
    handler: async ({ services, body }) => services.sessions.create(body),
  }),
  route({
    method: "GET",
    url: "/v1/sessions",
    scope: "agent",
    reaches: "list",
    tag: "sessions",
    summary: "List sessions with their counts",
    description:
      "The 100 most recently active sessions, each with its message, subagent, peer-thread and open-todo (`openTodos`) counts.",
    ok: { 200: { description: "`{ sessions }`", schema: sessionList } },
    handler: async ({ services, agents }) => {
      const list = await services.sessions.list(100, agents);
      // The todos domain answers; sessions without open todos are absent from its map.
      const open = await services.todos.openCounts(list.map((s) => s.id));
      return { sessions: list.map((s) => ({ ...s, openTodos: open.get(s.id) ?? 0 })) };
    },
  }),
  route({
    method: "GET",
    url: "/v1/sessions/:id",
    scope: "agent",
    reaches: [{ session: "params.id" }],
    tag: "sessions",
    summary: "Show a session with its counts",
    params: sessionParams,
    ok: { 200: { description: "The session, with its counts", schema: sessionWithCounts } },
    handler: async ({ services, params }) => services.sessions.get(params.id),
  }),
  route({
    method: "DELETE",
    url: "/v1/sessions/:id",
    scope: "agent",
    reaches: [{ session: "params.id" }],
    tag: "sessions",
    summary: "Remove a session (its transcript goes; timers, todos, clears and events stay on record)",
    description:
      'Answers 409 naming what is still bound to the session: pending notify timers and open todos (`force=true` cancels them, timers as `Cancelled` with the reason `session "<id>" was removed`), cron jobs that deliver into it and timers being delivered (never overridden: move or remove the jobs, or retry), or a clear under way. A removal appends a `sessionRemoved` event and tells the other hook systems (gateway `sessionDisposed`, event hook `session:end`, Python `on_session_end`, extension `session:removed`). The id is not reused.',
    params: sessionParams,
    query: removeQuery,
    status: 204,
    ok: { 204: "Removed" },
    errors: [409],
    handler: async ({ services, params, query }) => {
      await services.removals.remove(params.id, { force: query.force });
    },
  }),
  route({
    method: "POST",
    url: "/v1/sessions/:id/messages",
    scope: "agent",
    reaches: [{ session: "params.id" }],
    tag: "sessions",
    summary: "Append to a session's transcript",
    params: sessionParams,
    body: appendMessagesInput,
    status: 201,
    ok: { 201: { description: "`{ appended }`", schema: appendedAnswer } },
    handler: async ({ services, params, body }) => services.sessions.append(params.id, body),
  }),
  route({
    method: "GET",
    url: "/v1/sessions/:id/messages",
    scope: "agent",
    reaches: [{ session: "params.id" }],
    tag: "sessions",
    summary: "Read a session's transcript, oldest first",
    params: sessionParams,
    query: readMessagesQuery,
    ok: { 200: { description: "`{ messages }`", schema: messageList } },
    handler: async ({ services, params, query }) => ({ messages: await services.sessions.messages(params.id, query) }),
  }),
  route({
    method: "POST",
    url: "/v1/sessions/:id/subagents",
    scope: "agent",
    reaches: [{ session: "params.id" }],
    tag: "sessions",
    summary: "Record a direct subagent of the session",
    params: sessionParams,
    body: relationInput,
    status: 204,
    ok: { 204: "Recorded" },
    handler: async ({ services, params, body }) => {
      await services.sessions.addSubagent(params.id, body);
    },
  }),
  route({
    method: "POST",
    url: "/v1/sessions/:id/peer-threads",
    scope: "agent",
    reaches: [{ session: "params.id" }],
    tag: "sessions",
    summary: "Record a peer thread of the session",
    params: sessionParams,
    body: relationInput,
    status: 204,
    ok: { 204: "Recorded" },
    handler: async ({ services, params, body }) => {
      await services.sessions.addPeerThread(params.id, body);
    },
  }),
  route({
    method: "POST",
    url: "/v1/sessions/:id/clear",
    scope: "agent",
    reaches: [{ session: "params.id" }],
    tag: "sessions",
    summary: "`/new`: clear the session (sessionClearing, delete, sessionCleared event, sessionClearCompleted)",
    params: sessionParams,
    body: clearInput,
    bodyOptional: true,
    status: 201,
    ok: {
      201: { description: "The clear, once the transcript is deleted", schema: clearView },
      200: { description: "The clear already under way, which this request joined", schema: clearView },
    },
    // Answers once the transcript is deleted (200 when it joined a clear already under way).
    handler: async ({ services, params, body, reply }) => {
      const { clear, joined } = await services.clears.request(params.id, body);
      if (joined) void reply.status(200);
      return clear;
    },
  }),
  route({
    method: "GET",
    url: "/v1/session-clears/:id",
    scope: "agent",
    reaches: [{ clear: "params.id" }],
    tag: "sessions",
    summary: "Show a session clear",
    params: idParams("session clear"),
    ok: { 200: { description: "The clear", schema: clearView } },
    handler: async ({ services, params }) => services.clears.get(params.id),
  }),
  route({
    method: "GET",
    url: "/v1/events",
    scope: "agent",
    reaches: "list",
    tag: "sessions",
    summary: "Durable events after a cursor (sessionCleared, sessionRemoved), oldest first",
    description:
      "Without `after`, from the oldest event still kept. Events older than `[retention] events` are removed: a cursor below the last one removed answers 410 with `error.oldestCursor`, the oldest cursor still valid (what was between is gone).",
    query: eventsQuery,
    ok: { 200: { description: "`{ events, next }` (`next` is the cursor to pass on)", schema: eventPage } },
    errors: [410],
    handler: async ({ services, query, agents }) => services.sessions.events(query, agents),
  }),
];
