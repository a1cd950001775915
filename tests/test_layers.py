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
* Inside `chat.live`, the wire protocol (`chat.live.protocol`: the server's
  frames, a shared link's, the channel layer's events) imports only itself and
  `chat.models`: the engine, the sockets and the pages all speak it
  (`INNER_ROWS`).
* `chat.web` (pages), `chat.ops` (operators' pages) and `chat.accounts`
  (sign-in) reach the engine only through its doors (`LIVE_DOORS`: modules of
  `chat.live` by their name, wherever they sit in it): its commands
  (`control`), the group names and event types (`channel_events`), what the
  loop knows of the model servers (`loop_state`) and what they are doing
  (`server_status`).
* The modules at the top of `chat` (`admin`, `apps`, `checks`: Django's ways
  into the app) may import any package; no package imports them.
* `ALLOWED`: a module's import of a sibling's module against its package's
  row, each with its reason and when it ends.

The checker that reads the imports and finds the cycles is
tests/support/layers.py (its own tests beside it); the rules are here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.layers import (
    FAKE_CHAT,
    FAKE_FILES,
    Graph,
    import_cycles,
    import_graph,
    within,
    written,
)

ROOT = Path(__file__).resolve().parent.parent

# The packages of chat, and the siblings each may import, with why.
MAY_IMPORT: dict[str, dict[str, str]] = {
    "chat.models": {},  # the rows and their behaviour: the floor
    "chat.http": {},  # request plumbing; the body routes are given (chat/apps.py)
    "chat.upstream": {},  # the model servers' clients
    "chat.rendering": {},  # Markdown to safe HTML
    "chat.simulator": {},  # a model server of our own (demo, tests)
    "chat.work": {},  # worker processes: their readers named, not imported
    "chat.files": {"chat.work": "uploads are read in the worker processes"},
    "chat.tools": {
        "chat.models": "the tool servers, who may use them, users' credentials",
        "chat.work": "a fetched page's text is extracted in a worker process",
    },
    "chat.transfer": {
        "chat.models": "exports and imports conversations",
        "chat.work": "an import's file is read in a worker process",
        "chat.http": "an export is a response streamed from a generator",
    },
    "chat.live": {
        "chat.models": "the engine stores the turns and their answers",
        "chat.upstream": "and asks the model servers",
        "chat.rendering": "and renders an answer once finished",
        "chat.tools": "and runs the tools the model calls",
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
        "chat.tools": "the tools menu lists the tool sources offered to the user",
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
ALLOWED: set[tuple[str, str]] = set()
# Packages inside a package of chat, and the only parts of chat they import.
INNER_ROWS = {
    "chat.live.protocol": ("chat.live.protocol", "chat.models"),
}
# The modules of chat.live the pages may import, by name.
LIVE_DOORS = ("control", "channel_events", "loop_state", "server_status")
PAGES = ("chat.web", "chat.ops", "chat.accounts")


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
    for inner, allowed in INNER_ROWS.items():
        if within(importer, inner) and not any(within(imported, a) for a in allowed):
            return f"{inner} may import only {', '.join(allowed[1:])}"
    source, target = _package(importer), _package(imported)
    door = imported.rpartition(".")[2]
    if source in PAGES and within(imported, "chat.live") and door not in LIVE_DOORS:
        return (
            "chat.web, chat.ops and chat.accounts do not import the engine, the "
            "protocol or the sockets (use chat.live.engine.control and "
            "chat.live.protocol.channel_events)"
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


# --- the rules, on small packages and graphs written for the test -------------


def test_checker_catches_a_layer_violation(tmp_path: Path) -> None:
    assert layer_violations(written(tmp_path, FAKE_CHAT)) == [
        "chat.live.protocol.frames imports chat.live.engine.runner: "
        "chat.live.protocol may import only chat.models",
        "chat.upstream.pool imports chat.models: "
        "chat.upstream imports nothing from chat outside itself",
        "chat.web.pages imports chat.live.protocol.frames: chat.web, chat.ops and "
        "chat.accounts do not import the engine, the protocol or the sockets "
        "(use chat.live.engine.control and chat.live.protocol.channel_events)",
    ]


def test_the_engine_never_imports_the_sockets_and_the_sockets_never_the_pages() -> None:
    graph: Graph = {
        "chat.live.runner": {"chat.sockets.feed"},
        "chat.sockets.feed": {"chat.live.runner", "chat.web.sharing"},
    }
    assert layer_violations(graph) == [
        "chat.live.runner imports chat.sockets.feed: chat.live may import only "
        "chat.models, chat.upstream, chat.rendering, chat.tools",
        "chat.sockets.feed imports chat.web.sharing: chat.sockets may import only "
        "chat.http, chat.live, chat.models, chat.upstream, chat.rendering",
    ]


def test_checker_catches_a_sibling_import_not_allowed(tmp_path: Path) -> None:
    assert layer_violations(written(tmp_path, FAKE_FILES)) == [
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
        "chat.ops.health": {
            "chat.live.protocol.channel_events",
            "chat.live.engine.loop_state",
        },
    }
    assert layer_violations(graph) == [
        "chat.web.pages imports chat.live.engine.runner: chat.web, chat.ops and "
        "chat.accounts do not import the engine, the protocol or the sockets "
        "(use chat.live.engine.control and chat.live.protocol.channel_events)",
    ]


def test_every_package_of_chat_has_a_row(chat_graph: Graph) -> None:
    packages = {
        _package(module)
        for module in chat_graph
        if module != "chat" and _package(module) not in TOP_MODULES
    }
    assert packages == set(MAY_IMPORT)
