import { readFileSync, realpathSync, statSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type ivm from "isolated-vm";

// Beyond this a module is not a plugin's source but an attempt to fill the daemon's memory.
const MAX_MODULE_BYTES = 4 * 1024 * 1024;
const EXTENSIONS = /\.(?:js|mjs|ts|mts)$/;

/**
 * Reads one module of a plugin for its isolate. The daemon, not the plugin, resolves every
 * static import: only relative specifiers (or file URLs) naming a regular file whose real path,
 * symlinks resolved, lies inside the plugin's own folder. `node:` built-ins, packages, files
 * outside the folder and symlinks that point out are refused with the reason. TypeScript is
 * stripped of its types here (the isolate only speaks JavaScript).
 */
export function readPluginModule(
  pluginDir: string,
  specifier: string,
  referrer: string,
): { path: string; code: string } {
  const refuse = (why: string) => new Error(`import of "${specifier}" refused: ${why}`);
  let wanted: string;
  if (specifier.startsWith("./") || specifier.startsWith("../")) wanted = resolve(dirname(referrer), specifier);
  else if (specifier.startsWith("file:")) wanted = fileURLToPath(specifier);
  else if (specifier.startsWith("/")) wanted = specifier;
  else throw refuse("a plugin may import only its own files (no node: built-ins, no packages)");
  const root = realpathSync(pluginDir) + sep;
  if (!wanted.startsWith(resolve(pluginDir) + sep) && !wanted.startsWith(root))
    throw refuse("it is outside the plugin folder");
  let real: string;
  try {
    real = realpathSync(wanted);
  } catch {
    throw refuse("no such file in the plugin folder");
  }
  if (!real.startsWith(root)) throw refuse("it is outside the plugin folder");
  if (!EXTENSIONS.test(real)) throw refuse("only .js, .mjs, .ts and .mts files can be imported");
  const stat = statSync(real);
  if (!stat.isFile()) throw refuse("not a regular file");
  if (stat.size > MAX_MODULE_BYTES) throw refuse(`larger than ${MAX_MODULE_BYTES} bytes`);
  let code = readFileSync(real, "utf8");
  if (/\.m?ts$/.test(real)) code = stripTypeScriptTypes(code, { mode: "strip" });
  return { path: real, code };
}

/**
 * Compiles a plugin's entry and, through the daemon's resolver, every file it imports statically
 * (each file once), then runs it. `import()` has no resolver in an isolate and fails there.
 */
export async function loadModules(
  isolate: ivm.Isolate,
  context: ivm.Context,
  dir: string,
  entry: string,
  timeoutMs: number,
): Promise<ivm.Module> {
  const compiled = new Map<string, Promise<ivm.Module>>();
  const paths = new WeakMap<ivm.Module, string>();
  const compile = (specifier: string, referrer: string): Promise<ivm.Module> => {
    const { path, code } = readPluginModule(dir, specifier, referrer);
    let module = compiled.get(path);
    if (!module) {
      module = isolate.compileModule(code, { filename: pathToFileURL(path).href }).then((m) => {
        paths.set(m, path);
        return m;
      });
      compiled.set(path, module);
    }
    return module;
  };
  const root = await compile(entry, join(dir, "(entry)"));
  await root.instantiate(context, (specifier, referrer) =>
    compile(specifier, paths.get(referrer) ?? join(dir, "(entry)")),
  );
  await root.evaluate({ timeout: timeoutMs, promise: true });
  return root;
}
