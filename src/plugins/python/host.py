"""The host of one Python plugin: loads it, then answers calls as JSON lines.

Usage: host.py <plugin dir> <event-hook|plugin> <file> <memory limit MB>

Requests on stdin: {"id": 1, "key": "pre_tool_call#0", "args": [...], "kwargs": {...}}.
Answers on the protocol stream: {"id": 1, "ok": <value>} or {"id": 1, "error": "<message>"}.
The first line is {"ready": true, "registrations": [{"key", "event", "kind"?, "section"?}]} or
{"ready": false, "error"}; a system prompt section is listed with kind "section".
The plugin's own output (print, logging) goes to stderr, which the daemon logs under its name.
"""

import ast
import asyncio
import importlib.util
import inspect
import json
import logging
import os
import re
import sys
import traceback
import types

# System prompt sections, bounded as on the page's platform: an id, one position, at most 4000 characters.
_SECTION_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
_SECTION_POSITIONS = ("after_memory",)
_SECTION_MAX_CHARS = 4000


def _limit_memory(megabytes):
    try:
        import resource

        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError) as err:
        print(f"memory limit not applied: {err}", file=sys.stderr)


def _load(path, name, package_dir=None):
    locations = [package_dir] if package_dir else None
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=locations)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _load_plugin(path, name, package_dir):
    """Loads a plugin module; returns it with its register(ctx) functions, in definition order.

    A module that defines register(ctx) more than once at top level (examples pasted one after
    another, each with its own register) would keep only the last under Python's rules, silently
    dropping the others' hooks. Each definition is kept as the module defines it, and all are called.
    """
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), path)
    defs = [
        node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "register"
    ]
    if len(defs) < 2:
        module = _load(path, name, package_dir)
        register = getattr(module, "register", None)
        return module, [register] if callable(register) else []
    keep = "__missiond_kept_register__"
    body = []
    for node in tree.body:
        body.append(node)
        if node in defs:
            body.append(ast.copy_location(ast.parse(f"{keep}(register)").body[0], node))
    tree.body = body
    ast.fix_missing_locations(tree)
    locations = [package_dir] if package_dir else None
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=locations)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    registers = []
    module.__dict__[keep] = registers.append
    exec(compile(tree, path, "exec"), module.__dict__)
    del module.__dict__[keep]
    lines = ", ".join(str(node.lineno) for node in defs)
    logging.getLogger("missiond").info(
        "%s defines register(ctx) %d times (lines %s): each is called, in order",
        os.path.basename(path),
        len(defs),
        lines,
    )
    return module, registers


class Context:
    """What register(ctx) receives: hooks and sections are kept in registration order."""

    def __init__(self, registrations):
        self._registrations = registrations

    def register_hook(self, name, callback):
        if not callable(callback):
            raise TypeError(f"register_hook({name!r}) needs a callable")
        self._registrations.append((f"{name}#{len(self._registrations)}", str(name), callback, {}))

    def register_system_prompt_section(self, id, content, *, position="after_memory", max_chars=_SECTION_MAX_CHARS):
        """A section added to the system prompt: a string, or a callable given the session's info.

        The daemon calls it (with a read-only session_info) each time a runtime asks for a system
        prompt (POST /v1/hooks/systemPrompt) and appends what it returns.
        """
        if not isinstance(id, str) or not _SECTION_ID.match(id):
            raise ValueError(
                "system prompt section id must be 1-128 lowercase characters using letters, numbers, '.', '_', or '-'"
            )
        if not isinstance(content, str) and not callable(content):
            raise TypeError("system prompt section content must be a string or callable")
        if position not in _SECTION_POSITIONS:
            raise ValueError("system prompt section position must be one of: " + ", ".join(_SECTION_POSITIONS))
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or not 0 < max_chars <= _SECTION_MAX_CHARS:
            raise ValueError(f"system prompt section max_chars must be between 1 and {_SECTION_MAX_CHARS}")
        key = f"system_prompt_section:{id}"
        if any(existing == key for existing, *_ in self._registrations):
            raise ValueError(f"system prompt section {id!r} is already registered")

        def render(session_info):
            info = types.MappingProxyType(dict(session_info or {}))
            return content(info) if callable(content) else content

        section = {"id": id, "position": position, "max_chars": max_chars}
        self._registrations.append((key, "system_prompt_section", render, {"kind": "section", "section": section}))


class _Fields(dict):
    """A JSON object whose keys also read as attributes (event.source.chat_id), as the page's objects do."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _fields(value):
    """Objects of a call's arguments as _Fields, all the way down; other values as they are."""
    if isinstance(value, dict):
        return _Fields({key: _fields(inner) for key, inner in value.items()})
    if isinstance(value, list):
        return [_fields(inner) for inner in value]
    return value


def _jsonable(value):
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return str(value)


def main():
    plugin_dir, kind, file_name, memory_mb = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    # The protocol gets its own copy of stdout; fd 1 then points at stderr for the plugin's prints.
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    _limit_memory(memory_mb)
    sys.path.insert(0, plugin_dir)
    registrations = []
    try:
        path = os.path.join(plugin_dir, file_name)
        if kind == "event-hook":
            module = _load(path, "hook_handler")
            if not callable(getattr(module, "handle", None)):
                raise RuntimeError(f"{file_name} defines no handle(event_type, context)")
            registrations.append(("handle", "*", module.handle, {}))
        else:
            package = plugin_dir if file_name == "__init__.py" else None
            name = os.path.basename(plugin_dir).replace("-", "_") or "plugin"
            _, registers = _load_plugin(path, name, package)
            if not registers:
                raise RuntimeError(f"{file_name} defines no register(ctx)")
            context = Context(registrations)
            for register in registers:
                register(context)
    except BaseException as err:  # noqa: BLE001 - any failure to load is reported, not raised
        detail = "".join(traceback.format_exception_only(type(err), err)).strip()
        protocol.write(json.dumps({"ready": False, "error": detail}) + "\n")
        return 1
    handlers = {key: callback for key, _, callback, _ in registrations}
    listed = [{"key": key, "event": event, **extra} for key, event, _, extra in registrations]
    protocol.write(json.dumps({"ready": True, "registrations": listed}) + "\n")
    loop = asyncio.new_event_loop()
    for raw in sys.stdin:
        request = json.loads(raw)
        try:
            args = _fields(request.get("args", []))
            kwargs = _fields(request.get("kwargs", {}))
            result = handlers[request["key"]](*args, **kwargs)
            if inspect.isawaitable(result):
                result = loop.run_until_complete(result)
            answer = {"id": request["id"], "ok": _jsonable(result)}
        except Exception as err:  # noqa: BLE001 - a handler's failure is its outcome
            answer = {"id": request["id"], "error": f"{type(err).__name__}: {err}"}
        protocol.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
