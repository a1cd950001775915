"""The layers of the `chat` app, checked from the source of every module.

Lower layers never import higher ones, sibling packages import each other
only where `MAY_IMPORT` says so and why, and no import cycle joins two `chat`
modules outside `chat/models/`. Every import counts: at the top of a module,
inside a function and under `if TYPE_CHECKING:` (a cycle that only type
checking sees is still a knot in the design). `from chat.live import frames`
imports the module `chat.live.frames`. A package's `__init__` is a module like
the others: its imports of its own submodules count; and a module that takes
names from its own package (`from chat.files import documents`) reads that
package's namespace, half made while the package's `__init__` is importing
that module: an edge to the package, when its `__init__` imports any of ours.

The rules, by package (they hold for any module moved inside a package):

* Each package of `chat` has a row in `MAY_IMPORT`: the sibling packages it
  may import, each with its reason. A sibling import not in its row fails, and
  so does a new package without a row. `chat.models`, `chat.http` (request
  plumbing), `chat.upstream`, `chat.rendering`, `chat.simulator` and
  `chat.work` import no sibling.
* `chat.web` (pages), `chat.ops` (operators' pages) and `chat.accounts`
  (sign-in) reach the engine only through its doors (`LIVE_DOORS`: modules of
  `chat.live` by their name, wherever they sit in it): its commands
  (`control`), the group names and event types (`events`), what the loop
  knows of the model servers (`loop_state`).
* The modules at the top of `chat` (`admin`, `apps`, `checks`: Django's ways
  into the app) may import any package; no package imports them.
* `ALLOWED`: a module's import of a sibling's module against its package's
  row, each with its reason and when it ends.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
Graph = dict[str, set[str]]

# The packages of chat, and the siblings each may import, with why.
MAY_IMPORT: dict[str, dict[str, str]] = {
    "chat.models": {},  # the rows and their behaviour: the floor
    "chat.http": {},  # request plumbing; the body routes are given (chat/apps.py)
    "chat.upstream": {},  # the model servers' clients
    "chat.rendering": {},  # Markdown to safe HTML
    "chat.simulator": {},  # a model server of our own (demo, tests)
    "chat.work": {},  # worker processes: their readers named, not imported
    "chat.files": {"chat.work": "uploads are read in the worker processes"},
    "chat.transfer": {
        "chat.models": "exports and imports conversations",
        "chat.work": "an import's file is read in a worker process",
        "chat.http": "an export is a response streamed from a generator",
    },
    "chat.live": {
        "chat.models": "the engine stores the turns and their answers",
        "chat.upstream": "and asks the model servers",
        "chat.rendering": "and renders an answer once finished",
    },
    "chat.sockets": {
        "chat.http": "Daphne's connection frames a socket's text (text_sender)",
        "chat.live": "the WebSocket front door of the engine",
        "chat.models": "a socket's conversation, share link and user",
        "chat.upstream": "as the engine may",
        "chat.rendering": "as the engine may",
    },
    "chat.api": {
        "chat.http": "the client's address, the API's request bodies",
        "chat.live": "the HTTP front door of the engine",
        "chat.models": "API keys, conversations",
        "chat.upstream": "as the engine may",
        "chat.rendering": "as the engine may",
    },
    "chat.accounts": {
        "chat.models": "accounts, teams and the audit log",
        "chat.http": "the client's address, for the throttle and the audit log",
    },
    "chat.web": {
        "chat.models": "what the pages show and change",
        "chat.http": "request plumbing",
        "chat.live": "the engine's commands (LIVE_DOORS)",
        "chat.accounts": "sign-in: its forms, throttle and look-alike usernames",
        "chat.files": "an attachment read and checked",
        "chat.work": "an attachment's budget in a worker process",
        "chat.transfer": "the export and import pages",
    },
    "chat.ops": {
        "chat.models": "what the operators' pages show and change",
        "chat.http": "the client's address, for the audit log",
        "chat.live": "what the engine is doing (LIVE_DOORS)",
        "chat.upstream": "the model servers asked directly (discovery, health)",
        "chat.accounts": "the user admin refuses look-alike usernames",
        "chat.transfer": "staff export a user's conversations",
    },
    "chat.templatetags": {
        "chat.models": "the rows the templates show",
        "chat.files": "the kinds of file an upload takes",
        "chat.rendering": "Markdown in the templates",
        "chat.transfer": "a conversation as Markdown",
    },
    "chat.management": {  # the commands, each a way in like the pages
        "chat.models": "the rows the commands work on",
        "chat.accounts": "look-alike usernames",
        "chat.ops": "runsite finds the model servers (discovery)",
        "chat.simulator": "simulate_ollama serves it",
        "chat.transfer": "export and import from the command line",
        "chat.upstream": "runsite asks the model servers",
    },
    "chat.migrations": {"chat.models": "data migrations use the models' code"},
}
TOP_MODULES = ("chat.admin", "chat.apps", "chat.checks")
# One module of a package may import one of a sibling's against its row.
ALLOWED = {
    # Until it moves next to the engine (issue 41, another branch): then the
    # import follows it and this line goes.
    ("chat.web.conversations.model_picker", "chat.ops.server_status"),
}
# The modules of chat.live the pages may import, by name.
LIVE_DOORS = ("control", "events", "loop_state")
PAGES = ("chat.web", "chat.ops", "chat.accounts")
NO_CYCLE_CHECK = "chat.models"


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def module_names(package_dir: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of the package at `package_dir`."""
    base = package_dir.parent
    names = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _resolve(name: str, known: set[str]) -> str | None:
    """The longest prefix of `name` that is one of our modules."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(source: str, module: str, is_package: bool, known: set[str]) -> set[str]:
    """Our modules that `module` imports anywhere in `source` (functions and
    `if TYPE_CHECKING:` blocks included), and the packages above it that it
    takes names from (`import_graph` keeps those whose `__init__` imports)."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from a import b` imports the module a.b if there is one, else a.
            targets = [f"{base}.{alias.name}" for alias in node.names]
            if base != module and within(module, base) and base in known:
                found.add(base)  # its own package's namespace, read
        else:
            continue
        for target in targets:
            resolved = _resolve(target, known)
            if resolved is not None and resolved != module:
                found.add(resolved)
    return found


def import_graph(package_dir: Path) -> Graph:
    names = module_names(package_dir)
    known = set(names)
    found = {
        module: imports_of(path.read_text(), module, path.name == "__init__.py", known)
        for module, path in names.items()
    }
    # A package above the importer counts when its `__init__` imports any of
    # ours: only then is its namespace half made while the importer runs.
    return {
        module: {name for name in imported if not within(module, name) or found[name]}
        for module, imported in found.items()
    }


def _package(module: str) -> str:
    """The package of `chat` that `module` is in (or the top module itself)."""
    return ".".join(module.split(".")[:2])


def _row(package: str) -> str:
    allowed = MAY_IMPORT[package]
    if not allowed:
        return f"{package} imports nothing from chat outside itself"
    return f"{package} may import only {', '.join(allowed)}"


def _rule_broken(importer: str, imported: str) -> str | None:
    if (importer, imported) in ALLOWED or imported == "chat":
        return None
    source, target = _package(importer), _package(imported)
    door = imported.rpartition(".")[2]
    if source in PAGES and within(imported, "chat.live") and door not in LIVE_DOORS:
        return (
            "chat.web, chat.ops and chat.accounts do not import the engine, the "
            "protocol or the sockets (use chat.live.control and chat.live.events)"
        )
    if source == target or source in TOP_MODULES:
        return None
    if target in TOP_MODULES:
        return f"no package imports {target}: it is one of Django's ways into chat"
    if source not in MAY_IMPORT:
        return f"{source} has no row in MAY_IMPORT (tests/test_layers.py)"
    if target not in MAY_IMPORT[source]:
        return _row(source)
    return None


def layer_violations(graph: Graph) -> list[str]:
    problems = []
    for importer in sorted(graph):
        for imported in sorted(graph[importer]):
            rule = _rule_broken(importer, imported)
            if rule is not None:
                problems.append(f"{importer} imports {imported}: {rule}")
    return problems


def _strongly_connected(graph: Graph) -> Iterator[list[str]]:
    """Tarjan's components, iteratively (each a list of modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                yield sorted(component)


def _cycle_through(start: str, graph: Graph, members: set[str]) -> list[str]:
    """One shortest cycle from `start` back to itself, inside `members`."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    return [*paths[node], start]
                if child not in paths:
                    paths[child] = [*paths[node], child]
                    following.append(child)
        frontier = following
    return [start]


def import_cycles(graph: Graph) -> list[str]:
    checked = {
        module: {name for name in imported if not within(name, NO_CYCLE_CHECK)}
        for module, imported in graph.items()
        if not within(module, NO_CYCLE_CHECK)
    }
    problems = []
    for component in _strongly_connected(checked):
        if len(component) > 1:
            members = set(component)
            cycle = _cycle_through(component[0], checked, members)
            edges = [
                f"{module} -> {imported}"
                for module in component
                for imported in sorted(checked[module] & members)
            ]
            problems.append(
                "import cycle (no cycles among chat modules outside chat.models): "
                + " -> ".join(cycle)
                + f"; the imports that join {', '.join(component)}: "
                + ", ".join(edges)
            )
    return problems


@pytest.fixture(scope="module")
def chat_graph() -> Graph:
    return import_graph(ROOT / "chat")


def test_lower_layers_do_not_import_higher_ones(chat_graph: Graph) -> None:
    problems = layer_violations(chat_graph)
    assert not problems, "\n".join(["layer rules broken:", *problems])


def test_no_import_cycles(chat_graph: Graph) -> None:
    problems = import_cycles(chat_graph)
    assert not problems, "\n".join(problems)


def test_the_graph_sees_every_kind_of_import(chat_graph: Graph) -> None:
    """The real tree parses into a graph with edges (no silent empty pass)."""
    assert "chat.live.runner" in chat_graph
    assert "chat.models" in chat_graph["chat.live.runner"]


def test_test_modules_import_helpers_not_other_test_modules() -> None:
    """Shared helpers live in helper modules (tests/support/, and a package's
    own beside its tests): importing a test module runs its module-level code
    and hides which helpers are shared."""
    graph = import_graph(ROOT / "tests")
    problems = [
        f"{importer} imports the test module {imported}"
        for importer in sorted(graph)
        for imported in sorted(graph[importer])
        if imported.rpartition(".")[2].startswith("test_")
    ]
    assert not problems, "\n".join(problems)


# --- the checker itself, on a small package written for the test ------------

FAKE_CHAT = {
    "__init__.py": "",
    "models/__init__.py": "from chat.models.rows import Row\n",
    "models/rows.py": "from chat.models import paging\n",
    "models/paging.py": "from chat.models import rows\n",  # inside models: fine
    "live/__init__.py": "",
    "live/frames.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from chat.live.runner import Generation\n"
    ),
    "live/runner.py": "from chat.live import frames\n",
    "live/events.py": "",
    "live/control.py": "from . import runner\n",
    "upstream/__init__.py": "from chat.upstream.pool import client\n",
    "upstream/pool.py": (
        "def client():\n    from chat.models import Row\n"
    ),  # a function's import counts
    "web/__init__.py": "",
    "web/pages.py": (
        "from chat.live import control, events\nfrom ..live.frames import start\n"
    ),
}


def _fake_graph(tmp_path: Path) -> Graph:
    for name, source in FAKE_CHAT.items():
        path = tmp_path / "chat" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return import_graph(tmp_path / "chat")


def test_checker_sees_imports_in_functions_type_checking_and_relative(
    tmp_path: Path,
) -> None:
    graph = _fake_graph(tmp_path)
    assert graph["chat.live.frames"] == {"chat.live.runner"}
    assert graph["chat.live.runner"] == {"chat.live.frames"}
    assert graph["chat.live.control"] == {"chat.live.runner"}
    assert graph["chat.upstream.pool"] == {"chat.models"}
    assert graph["chat.web.pages"] == {
        "chat.live.control",
        "chat.live.events",
        "chat.live.frames",
    }
    # A package's `__init__` counts like any module, its own submodules too.
    assert graph["chat.upstream"] == {"chat.upstream.pool"}


def test_checker_catches_a_layer_violation(tmp_path: Path) -> None:
    assert layer_violations(_fake_graph(tmp_path)) == [
        "chat.upstream.pool imports chat.models: "
        "chat.upstream imports nothing from chat outside itself",
        "chat.web.pages imports chat.live.frames: chat.web, chat.ops and "
        "chat.accounts do not import the engine, the protocol or the sockets "
        "(use chat.live.control and chat.live.events)",
    ]


def test_checker_catches_a_cycle_outside_models_only(tmp_path: Path) -> None:
    assert import_cycles(_fake_graph(tmp_path)) == [
        "import cycle (no cycles among chat modules outside chat.models): "
        "chat.live.frames -> chat.live.runner -> chat.live.frames; the imports "
        "that join chat.live.frames, chat.live.runner: "
        "chat.live.frames -> chat.live.runner, chat.live.runner -> chat.live.frames"
    ]


def test_checker_catches_a_longer_cycle() -> None:
    graph = {"chat.a": {"chat.b"}, "chat.b": {"chat.c"}, "chat.c": {"chat.a"}}
    assert import_cycles(graph) == [
        "import cycle (no cycles among chat modules outside chat.models): "
        "chat.a -> chat.b -> chat.c -> chat.a; the imports that join chat.a, "
        "chat.b, chat.c: chat.a -> chat.b, chat.b -> chat.c, chat.c -> chat.a"
    ]


def test_the_engine_never_imports_the_sockets_and_the_sockets_never_the_pages() -> None:
    graph: Graph = {
        "chat.live.runner": {"chat.sockets.feed"},
        "chat.sockets.feed": {"chat.live.runner", "chat.web.sharing"},
    }
    assert layer_violations(graph) == [
        "chat.live.runner imports chat.sockets.feed: chat.live may import only "
        "chat.models, chat.upstream, chat.rendering",
        "chat.sockets.feed imports chat.web.sharing: chat.sockets may import only "
        "chat.http, chat.live, chat.models, chat.upstream, chat.rendering",
    ]


# A package that shows its submodules' names from its `__init__`, one of which
# takes names from the package (as chat/files did): a cycle.
FAKE_FILES = {
    "__init__.py": "",
    "files/__init__.py": "from chat.files.prepared import prepare\n",
    "files/prepared.py": "from chat.files import documents\n",
    "files/documents.py": "",
    "files/reading.py": "from chat.files.prepared import prepare\n",
    "ops/__init__.py": "",
    "ops/pages.py": "from chat.web import transfer\nfrom chat.http import streamed\n",
    "web/__init__.py": "",
    "web/transfer.py": "from chat import files\n",
    "http/__init__.py": "",
    "http/streamed.py": "",
}


def _written(tmp_path: Path, sources: dict[str, str]) -> Graph:
    for name, source in sources.items():
        path = tmp_path / "chat" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return import_graph(tmp_path / "chat")


def test_checker_catches_a_cycle_through_a_package_init(tmp_path: Path) -> None:
    graph = _written(tmp_path, FAKE_FILES)
    assert graph["chat.files"] == {"chat.files.prepared"}
    assert graph["chat.files.prepared"] == {"chat.files", "chat.files.documents"}
    assert graph["chat.files.reading"] == {"chat.files.prepared"}
    assert import_cycles(graph) == [
        "import cycle (no cycles among chat modules outside chat.models): "
        "chat.files -> chat.files.prepared -> chat.files; the imports that join "
        "chat.files, chat.files.prepared: chat.files -> chat.files.prepared, "
        "chat.files.prepared -> chat.files"
    ]


def test_a_package_init_that_imports_nothing_makes_no_cycle(tmp_path: Path) -> None:
    graph = _written(tmp_path, {**FAKE_FILES, "files/__init__.py": '"""Doc."""\n'})
    assert graph["chat.files"] == set()
    assert graph["chat.files.prepared"] == {"chat.files.documents"}
    assert import_cycles(graph) == []


def test_checker_catches_a_sibling_import_not_allowed(tmp_path: Path) -> None:
    assert layer_violations(_written(tmp_path, FAKE_FILES)) == [
        "chat.ops.pages imports chat.web.transfer: chat.ops may import only "
        + ", ".join(MAY_IMPORT["chat.ops"]),
    ]  # (chat.ops -> chat.http and chat.web -> chat.files are in their rows)


def test_a_package_without_a_row_and_an_import_of_a_top_module_fail() -> None:
    graph: Graph = {
        "chat.newroom.things": {"chat.models"},
        "chat.web.pages": {"chat.admin"},
        "chat.admin": {"chat.web.pages", "chat.ops.pages"},
    }
    assert layer_violations(graph) == [
        "chat.newroom.things imports chat.models: chat.newroom has no row in "
        "MAY_IMPORT (tests/test_layers.py)",
        "chat.web.pages imports chat.admin: no package imports chat.admin: it is "
        "one of Django's ways into chat",
    ]


def test_pages_reach_the_engine_through_its_doors_wherever_they_move() -> None:
    graph: Graph = {
        "chat.web.pages": {"chat.live.engine.control", "chat.live.engine.runner"},
        "chat.ops.health": {"chat.live.protocol.events", "chat.live.loop_state"},
    }
    assert layer_violations(graph) == [
        "chat.web.pages imports chat.live.engine.runner: chat.web, chat.ops and "
        "chat.accounts do not import the engine, the protocol or the sockets "
        "(use chat.live.control and chat.live.events)",
    ]


def test_every_package_of_chat_has_a_row(chat_graph: Graph) -> None:
    packages = {
        _package(module)
        for module in chat_graph
        if module != "chat" and _package(module) not in TOP_MODULES
    }
    assert packages == set(MAY_IMPORT)
