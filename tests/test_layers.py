"""The layers of the `chat` app, checked from the source of every module.

Lower layers never import higher ones, and no import cycle joins two `chat`
modules outside `chat/models/`. Every import counts: at the top of a module,
inside a function and under `if TYPE_CHECKING:` (a cycle that only type
checking sees is still a knot in the design). `from chat.live import frames`
imports the module `chat.live.frames`; a package's `__init__` importing its own
submodules is how a package shows its public names, not a dependency.

The rules, lowest first:

* `chat.models` imports nothing from `chat` outside `chat.models`.
* `chat.upstream`, `chat.rendering`, `chat.simulator`, `chat.work` (the worker
  processes for expensive work on untrusted input) import nothing from `chat`
  outside themselves; `chat.files` imports only `chat.work`.
* `chat.live.protocol` (the wire protocol: the server's frames, a shared
  link's, the channel layer's events) imports only itself and `chat.models`.
* `chat.live.engine` (the engine) may import the protocol, `chat.models`,
  `chat.upstream` and `chat.rendering`: never the sockets, the pages or the
  operators' modules.
* `chat.sockets` (the WebSocket endpoints) may import the engine and the
  protocol (`chat.live`) too, never
  `chat.web` or `chat.ops`; but `chat.sockets.daphne_protocol`, Daphne's
  connections for HTTP too, imports `chat.web.request_bodies`: each route's
  body limit and refusal, decided at the headers, before a byte is read.
* `chat.api` (the HTTP API for scripts) may import `chat.live` and what it may
  import, like the sockets, and `chat.web.client_address`; never the sockets,
  the other pages or the operators' modules.
* `chat.transfer` (export and import) imports only `chat.models` and
  `chat.work`: the pages, the admin and the commands call it.
* `chat.web` (pages), `chat.ops` (operators' pages) and `chat.accounts` (sign-in
  through identity providers) do not import the engine, the protocol or the
  sockets: they reach the engine through `chat.live.engine.control` (and
  `loop_state`, `server_status`), and the group names and event types through
  `chat.live.protocol.channel_events`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
Graph = dict[str, set[str]]

SELF_CONTAINED = ("chat.upstream", "chat.rendering", "chat.simulator", "chat.work")
FILES_MAY_IMPORT = ("chat.files", "chat.work")
TRANSFER_MAY_IMPORT = ("chat.transfer", "chat.models", "chat.work")
# One module of a package may import one of a sibling's, for the reason given
# in the module docstring above.
ALLOWED = {("chat.sockets.daphne_protocol", "chat.web.request_bodies")}
PROTOCOL_MAY_IMPORT = ("chat.live.protocol", "chat.models")
LIVE_MAY_IMPORT = ("chat.live", "chat.models", "chat.upstream", "chat.rendering")
SOCKETS_MAY_IMPORT = ("chat.sockets", *LIVE_MAY_IMPORT)
API_MAY_IMPORT = ("chat.api", *LIVE_MAY_IMPORT, "chat.web.client_address")
# The engine and the protocol, which pages must not import.
ENGINE_AND_PROTOCOL = (
    "chat.live.engine.runner",
    "chat.live.engine.generation",
    "chat.live.engine.checkpoints",
    "chat.live.engine.turn",
    "chat.live.protocol.frames",
    "chat.live.protocol.share_frames",
    "chat.sockets",
)
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
    `if TYPE_CHECKING:` blocks included)."""
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
        else:
            continue
        for target in targets:
            resolved = _resolve(target, known)
            if resolved is not None and resolved != module:
                found.add(resolved)
    if is_package:  # a package showing its submodules' names
        found = {name for name in found if not within(name, module)}
    return found


def import_graph(package_dir: Path) -> Graph:
    names = module_names(package_dir)
    known = set(names)
    return {
        module: imports_of(path.read_text(), module, path.name == "__init__.py", known)
        for module, path in names.items()
    }


def _rule_broken(importer: str, imported: str) -> str | None:
    if (importer, imported) in ALLOWED:
        return None
    if within(importer, "chat.files") and not any(
        within(imported, allowed) for allowed in FILES_MAY_IMPORT
    ):
        return "chat.files may import only chat.work"
    if within(importer, "chat.models") and not within(imported, "chat.models"):
        return "chat.models imports nothing from chat outside chat.models"
    for package in SELF_CONTAINED:
        if within(importer, package) and not within(imported, package):
            return f"{package} imports nothing from chat outside itself"
    if within(importer, "chat.transfer") and not any(
        within(imported, allowed) for allowed in TRANSFER_MAY_IMPORT
    ):
        return "chat.transfer may import only chat.models and chat.work"
    if within(importer, "chat.live.protocol") and not any(
        within(imported, allowed) for allowed in PROTOCOL_MAY_IMPORT
    ):
        return "chat.live.protocol may import only chat.models"
    if within(importer, "chat.live") and not any(
        within(imported, allowed) for allowed in LIVE_MAY_IMPORT
    ):
        return "chat.live may import only chat.models, chat.upstream, chat.rendering"
    if within(importer, "chat.sockets") and not any(
        within(imported, allowed) for allowed in SOCKETS_MAY_IMPORT
    ):
        return "chat.sockets may import only chat.live and what it may import"
    if within(importer, "chat.api") and not any(
        within(imported, allowed) for allowed in API_MAY_IMPORT
    ):
        return (
            "chat.api may import only chat.live, what it may import, and "
            "chat.web.client_address"
        )
    if any(within(importer, page) for page in PAGES) and any(
        within(imported, engine) for engine in ENGINE_AND_PROTOCOL
    ):
        return (
            "chat.web, chat.ops and chat.accounts do not import the engine, the "
            "protocol or "
            "the sockets (use chat.live.engine.control and "
            "chat.live.protocol.channel_events)"
        )
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
    assert "chat.live.engine.runner" in chat_graph
    assert "chat.models" in chat_graph["chat.live.engine.runner"]


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
    "live/engine/__init__.py": "",
    "live/protocol/__init__.py": "",
    "live/protocol/frames.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from chat.live.engine.runner import Generation\n"
    ),
    "live/engine/runner.py": "from chat.live.protocol import frames\n",
    "live/protocol/channel_events.py": "",
    "live/engine/control.py": "from . import runner\n",
    "upstream/__init__.py": "from chat.upstream.pool import client\n",
    "upstream/pool.py": (
        "def client():\n    from chat.models import Row\n"
    ),  # a function's import counts
    "web/__init__.py": "",
    "web/pages.py": (
        "from chat.live.engine import control\n"
        "from chat.live.protocol import channel_events\n"
        "from ..live.protocol.frames import start\n"
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
    assert graph["chat.live.protocol.frames"] == {"chat.live.engine.runner"}
    assert graph["chat.live.engine.runner"] == {"chat.live.protocol.frames"}
    assert graph["chat.live.engine.control"] == {"chat.live.engine.runner"}
    assert graph["chat.upstream.pool"] == {"chat.models"}
    assert graph["chat.web.pages"] == {
        "chat.live.engine.control",
        "chat.live.protocol.channel_events",
        "chat.live.protocol.frames",
    }
    assert graph["chat.upstream"] == set()  # its own submodules do not count


def test_checker_catches_a_layer_violation(tmp_path: Path) -> None:
    assert layer_violations(_fake_graph(tmp_path)) == [
        "chat.live.protocol.frames imports chat.live.engine.runner: "
        "chat.live.protocol may import only chat.models",
        "chat.upstream.pool imports chat.models: "
        "chat.upstream imports nothing from chat outside itself",
        "chat.web.pages imports chat.live.protocol.frames: chat.web, chat.ops and "
        "chat.accounts do not import the engine, the protocol or the sockets "
        "(use chat.live.engine.control and chat.live.protocol.channel_events)",
    ]


def test_checker_catches_a_cycle_outside_models_only(tmp_path: Path) -> None:
    assert import_cycles(_fake_graph(tmp_path)) == [
        "import cycle (no cycles among chat modules outside chat.models): "
        "chat.live.engine.runner -> chat.live.protocol.frames -> "
        "chat.live.engine.runner; the imports that join chat.live.engine.runner, "
        "chat.live.protocol.frames: chat.live.engine.runner -> "
        "chat.live.protocol.frames, chat.live.protocol.frames -> "
        "chat.live.engine.runner"
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
        "chat.live and what it may import",
    ]
