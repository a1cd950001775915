"""The import checker of tests/test_layers.py: the graph of a package's
modules read from their source (every import counts, in functions and under
`if TYPE_CHECKING:` too, a package's `__init__` like any module), its cycles,
and small packages written for the checker's own tests
(tests/support/test_layers.py). The rules it is checked against are
tests/test_layers.py's."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

Graph = dict[str, set[str]]
# The one package whose modules may import each other in a cycle.
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


# --- small packages written for the checker's tests ---------------------------

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


# A package that shows its submodules' names from its `__init__`, one of which
# takes names from the package (as chat/files did): a cycle.
FAKE_FILES = {
    "__init__.py": "",
    "files/__init__.py": "from chat.files.uploads import prepare\n",
    "files/uploads.py": "from chat.files import document_text\n",
    "files/document_text.py": "",
    "files/reading.py": "from chat.files.uploads import prepare\n",
    "ops/__init__.py": "",
    "ops/pages.py": "from chat.web import transfer\nfrom chat.http import streamed\n",
    "web/__init__.py": "",
    "web/transfer.py": "from chat import files\n",
    "http/__init__.py": "",
    "http/streamed.py": "",
}


def written(tmp_path: Path, sources: dict[str, str]) -> Graph:
    """The graph of a package `chat` made of `sources` under `tmp_path`."""
    for name, source in sources.items():
        path = tmp_path / "chat" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return import_graph(tmp_path / "chat")
