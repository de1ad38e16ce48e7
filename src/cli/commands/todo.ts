import type { Command } from "commander";
import { TODO_STATUSES } from "../../db/schema/enums.ts";
import type { TodoView } from "../../todos/service.ts";
import { choiceOption, type CliContext } from "../context.ts";
import { table } from "../format.ts";

/** `missiond todo …`: per-session todo lists. */
export function registerTodo(program: Command, ctx: CliContext): void {
  const todo = program.command("todo").description("per-session todo lists (through todoAdded)");
  add(todo, ctx);
  list(todo, ctx);
  for (const [verb, description] of [
    ["done", "mark a todo done"],
    ["cancel", "cancel a todo"],
  ] as const)
    close(todo, ctx, verb, description);
}

interface Added {
  batch: { id: string; status: string; reason: string | null; decidedBy: string | null };
  todos: TodoView[];
}

function add(todo: Command, ctx: CliContext): void {
  todo
    .command("add <texts...>")
    .description("add todos to a session")
    .requiredOption("--session <id>", "the session")
    .action(async (texts: string[], opts: { session: string }) => {
      const added = await ctx.client().post<Added>(`/v1/sessions/${encodeURIComponent(opts.session)}/todos`, { texts });
      ctx.print(added, () =>
        added.batch.status === "Added"
          ? table(
              ["ID", "TODO"],
              added.todos.map((t) => [t.id, t.text]),
            )
          : `batch ${added.batch.id} ${added.batch.status}${added.batch.decidedBy ? ` by ${added.batch.decidedBy}` : ""}: ${added.batch.reason}`,
      );
    });
}

function list(todo: Command, ctx: CliContext): void {
  todo
    .command("ls")
    .description("list a session's open todos")
    .requiredOption("--session <id>", "the session")
    .addOption(choiceOption("--status <status>", "which todos", [...TODO_STATUSES, "all"]).default("open"))
    .action(async (opts: { session: string; status: string }) => {
      const { todos } = await ctx
        .client()
        .get<{ todos: TodoView[] }>(`/v1/sessions/${encodeURIComponent(opts.session)}/todos`, { status: opts.status });
      ctx.print(todos, () =>
        table(
          ["ID", "STATUS", "TODO", "CREATED"],
          todos.map((t) => [t.id, t.status, t.text, t.createdAt]),
        ),
      );
    });
}

function close(todo: Command, ctx: CliContext, verb: "done" | "cancel", description: string): void {
  todo
    .command(`${verb} <id>`)
    .description(description)
    .action(async (id: string) => {
      const closed = await ctx.client().post<TodoView>(`/v1/todos/${encodeURIComponent(id)}/${verb}`, {});
      ctx.print(closed, () => `todo ${closed.id} ${closed.status}: ${closed.text}`);
    });
}
