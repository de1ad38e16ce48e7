import { z } from "zod";

/**
 * The pieces every answer schema is built from, as the views print them: ids are 64-bit integers
 * carried as decimal strings, instants ISO 8601 strings in UTC (`Date.toISOString()`).
 */

export const idString = z.string().regex(/^[0-9]+$/);

export const instant = z.iso.datetime();

/** A count or a number of milliseconds: a whole number. */
export const count = z.int();
