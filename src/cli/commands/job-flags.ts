import { InvalidArgumentError, Option, type Command } from "commander";
import { z } from "zod";
import { parseInput } from "../../validation.ts";
import { ApiError } from "../client.ts";
import { UsageError } from "../context.ts";
import { jobFieldList, longFlag, type FieldSpec } from "../../cron/fields.ts";

/**
 * `cron add` and `cron edit`'s flags and the request body they make, both from the job table
 * (`cron/fields.ts`): a field with a flag there has it on both commands (unless it says `only`),
 * with the same name, help, choices and checks, and reaches the API under its own name.
 */

type Mode = "add" | "edit";

const NONE = "none";
// What `none` parses to: commander turns a parser's null into "", so the clearing travels as this.
const CLEAR = Symbol("clear");

/** The values a field's schema allows, when it is a closed list (shown as the flag's choices). */
const choicesOf = (schema: z.ZodType): readonly string[] | null =>
  schema instanceof z.ZodEnum ? (schema.options as string[]) : null;

/** Parses a number flag against the field's own schema; `none` clears a clearable one on `cron edit`. */
function parserOf(field: FieldSpec, mode: Mode): ((value: string) => unknown) | null {
  const clears = mode === "edit" && field.clearable === true;
  const collect = field.cli?.collect;
  if (collect)
    return ((value: string, previous: unknown) => {
      if (clears && value === NONE) return CLEAR;
      try {
        return collect(value, previous === CLEAR ? undefined : previous);
      } catch (err) {
        throw new InvalidArgumentError((err as Error).message);
      }
    }) as (value: string) => unknown;
  const numeric = field.input instanceof z.ZodNumber;
  if (!clears && !numeric) return null;
  return (value: string) => {
    if (clears && value === NONE) return CLEAR;
    if (!numeric) return value;
    const n = Number(value);
    if (value.trim() === "" || !Number.isInteger(n)) throw new InvalidArgumentError("must be an integer");
    const checked = parseInput(field.input, n);
    if (!checked.success) throw new InvalidArgumentError(checked.error.issues[0]!.message);
    return n;
  };
}

function optionsOf(field: FieldSpec, mode: Mode): Option[] {
  const cli = field.cli;
  if (!cli || (cli.only && cli.only !== mode) || (mode === "edit" && field.addOnly)) return [];
  const option = new Option(cli.flags, mode === "edit" ? (cli.editHelp ?? cli.help) : cli.help);
  const choices = option.isBoolean() ? null : choicesOf(field.input);
  if (choices) option.choices(choices);
  const parse = parserOf(field, mode);
  if (parse) option.argParser(parse);
  if (mode === "add" && field.required) option.makeOptionMandatory();
  // Shown in --help; a boolean left out stays out of the request (the daemon's default applies).
  if (mode === "add" && field.default !== undefined && !option.isBoolean()) option.default(field.default);
  const off = mode === "edit" && cli.off ? [new Option(`--no-${longFlag(cli.flags)}`, cli.off)] : [];
  return [option, ...off];
}

/** Adds every field's flags to `cron add` or `cron edit`. */
export function addJobFlags(command: Command, mode: Mode): Command {
  for (const field of jobFieldList) for (const option of optionsOf(field, mode)) command.addOption(option);
  return command;
}

/** The API request of the flags given: only those, under the API's names (and what each implies). */
export function jobBody(opts: Record<string, unknown>, mode: Mode): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const implied: Record<string, unknown> = {};
  for (const field of jobFieldList) {
    const [option] = optionsOf(field, mode);
    const given = option ? opts[option.attributeName()] : undefined;
    if (given === undefined) continue;
    const value = given === CLEAR ? null : given;
    if (field.cli?.sends !== undefined) {
      if (value === true) body[field.api] = field.cli.sends;
      continue;
    }
    body[field.api] = value;
    Object.assign(implied, field.implies?.(value as never));
  }
  // A flag given outright wins over what another implies (`--session X --fresh-session` is refused, not guessed).
  return { ...implied, ...body };
}

/**
 * The daemon's refusal of a job request with the API's field names as the flags that set them
 * ("cron: empty" → "--cron: empty"), so a person reads back what they typed.
 */
export function inFlagWords(message: string): string {
  const flags = new Map(jobFieldList.flatMap((f) => (f.cli ? [[f.api as string, `--${longFlag(f.cli.flags)}`]] : [])));
  return message.replace(/(^|; )(\w+):/g, (whole, lead: string, name: string) =>
    flags.has(name) ? `${lead}${flags.get(name)!}:` : whole,
  );
}

/** Runs a job request; a 400 comes back as a usage error worded in flags. */
export async function asFlags<T>(request: Promise<T>): Promise<T> {
  try {
    return await request;
  } catch (err) {
    if (err instanceof ApiError && err.status === 400) throw new UsageError(inFlagWords(err.message));
    throw err;
  }
}
