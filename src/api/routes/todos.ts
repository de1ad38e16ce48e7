import { addTodosInput, listTodosQuery } from "../../todos/input.ts";
import { idParams, sessionParams } from "../params.ts";
import { route } from "../route.ts";
import { todoBatchAnswer, todoList, todoView } from "../../todos/answers.ts";

const todoParams = idParams("todo");

/** A session's todos, added in batches through the todoAdded chain. */
export const todoRoutes = [
  route({
    method: "POST",
    url: "/v1/sessions/:id/todos",
    scope: "agent",
    reaches: [{ session: "params.id" }],
    tag: "todos",
    summary: "Add a batch of todos (through the todoAdded chain)",
    params: sessionParams,
    body: addTodosInput,
    hop: true,
    status: 201,
    ok: { 201: { description: "`{ batch, todos }`", schema: todoBatchAnswer } },
    handler: async ({ services, params, body, hop }) => services.todos.add(params.id, body, { hop }),
  }),
  route({
    method: "GET",
    url: "/v1/sessions/:id/todos",
    scope: "agent",
    reaches: [{ session: "params.id" }],
    tag: "todos",
    summary: "A session's todos (open by default)",
    params: sessionParams,
    query: listTodosQuery,
    ok: { 200: { description: "`{ todos }`", schema: todoList } },
    handler: async ({ services, params, query }) => ({ todos: await services.todos.list(params.id, query) }),
  }),
  route({
    method: "POST",
    url: "/v1/todos/:id/done",
    scope: "agent",
    reaches: [{ todo: "params.id" }],
    tag: "todos",
    summary: "Mark a todo done",
    params: todoParams,
    ok: { 200: { description: "The todo", schema: todoView } },
    errors: [409],
    handler: async ({ services, params }) => services.todos.done(params.id),
  }),
  route({
    method: "POST",
    url: "/v1/todos/:id/cancel",
    scope: "agent",
    reaches: [{ todo: "params.id" }],
    tag: "todos",
    summary: "Cancel a todo",
    params: todoParams,
    ok: { 200: { description: "The todo", schema: todoView } },
    errors: [409],
    handler: async ({ services, params }) => services.todos.cancel(params.id),
  }),
];
