/**
 * zod's own English, which must never reach a person: the daemon words every check itself
 * (src/validation.ts `wording`). Built from zod's en locale messages.
 */
export const ZOD_WORDING =
  /Invalid (input|option|string|number|URL|url|ISO|key|discriminator|element|email|date)\b|Invalid value in\b|Too (small|big):|Unrecognized keys?:|expected (string|number|object|array|boolean|one of|int|nonoptional)\b|received (undefined|NaN|null|string|number|object|array|boolean)\b/;
