"""The import checker itself (tests/support/layers.py), on small packages
written for the test and on graphs: the imports it sees and the cycles it finds.
The rules are tests/test_layers.py's, checked there."""

from __future__ import annotations

from pathlib import Path

from tests.support.layers import FAKE_CHAT, FAKE_FILES, import_cycles, written


def test_checker_sees_imports_in_functions_type_checking_and_relative(
    tmp_path: Path,
) -> None:
    graph = written(tmp_path, FAKE_CHAT)
    assert graph["chat.live.protocol.frames"] == {"chat.live.engine.runner"}
    assert graph["chat.live.engine.runner"] == {"chat.live.protocol.frames"}
    assert graph["chat.live.engine.control"] == {"chat.live.engine.runner"}
    assert graph["chat.upstream.pool"] == {"chat.models"}
    assert graph["chat.web.pages"] == {
        "chat.live.engine.control",
        "chat.live.protocol.channel_events",
        "chat.live.protocol.frames",
    }
    # A package's `__init__` counts like any module, its own submodules too.
    assert graph["chat.upstream"] == {"chat.upstream.pool"}


def test_checker_catches_a_cycle_outside_models_only(tmp_path: Path) -> None:
    assert import_cycles(written(tmp_path, FAKE_CHAT)) == [
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


def test_checker_catches_a_cycle_through_a_package_init(tmp_path: Path) -> None:
    graph = written(tmp_path, FAKE_FILES)
    assert graph["chat.files"] == {"chat.files.uploads"}
    assert graph["chat.files.uploads"] == {"chat.files", "chat.files.document_text"}
    assert graph["chat.files.reading"] == {"chat.files.uploads"}
    assert import_cycles(graph) == [
        "import cycle (no cycles among chat modules outside chat.models): "
        "chat.files -> chat.files.uploads -> chat.files; the imports that join "
        "chat.files, chat.files.uploads: chat.files -> chat.files.uploads, "
        "chat.files.uploads -> chat.files"
    ]


def test_a_package_init_that_imports_nothing_makes_no_cycle(tmp_path: Path) -> None:
    graph = written(tmp_path, {**FAKE_FILES, "files/__init__.py": '"""Doc."""\n'})
    assert graph["chat.files"] == set()
    assert graph["chat.files.uploads"] == {"chat.files.document_text"}
    assert import_cycles(graph) == []
