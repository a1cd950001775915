"""How `make test` splits the suite between its pytest-xdist workers (`-n 3`).

`tests/conftest.py` hands this scheduler to pytest-xdist
(`pytest_xdist_make_scheduler`). A unit of work goes to one worker whole, and
each worker runs its units in the order it got them:

* A test module's tests that stand together in the collection are one unit:
  its module-scoped fixtures (the Daphne pair of `tests/live/conftest.py`, the
  collected static files of `tests/test_static.py`, ...) start once, on one
  worker, as in a plain run.
* The units keep the collection's order, which puts the browser tests last
  (`tests/conftest.py`, `pytest_collection_modifyitems`): a worker only starts
  Playwright once it has been given every unit before the browser tests, so
  no async test runs on a worker after its Playwright started
  (docs/testing.md, G8). A module with both kinds
  (`tests/support/plugins/test_servers.py`)
  is two units, one on each side of that line.
* The tests of `tests/browser/` are a unit each (they share only session
  fixtures): the suite's last minutes split evenly between the workers
  instead of one worker finishing a long module alone.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadScopeScheduling

# Tests under this folder are scheduled one by one.
ONE_BY_ONE = "tests/browser/"


def units(collection: list[str]) -> dict[str, str]:
    """Each test's unit of work: its module's stretch of the collection (a
    module split by the browser sort is two stretches), or, under
    `ONE_BY_ONE`, the test itself."""
    unit_of: dict[str, str] = {}
    stretches: dict[str, int] = {}
    previous = None
    for nodeid in collection:
        module = nodeid.split("::", 1)[0]
        if nodeid.startswith(ONE_BY_ONE):
            unit_of[nodeid] = nodeid
            previous = None
            continue
        if module != previous:
            stretches[module] = stretches.get(module, 0) + 1
            previous = module
        unit_of[nodeid] = f"{module}#{stretches[module]}"
    return unit_of


class ModuleStretches(LoadScopeScheduling):
    """pytest-xdist's `loadscope` with the units of `units`, in collection order."""

    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        # `loadscope` would move the largest units first, browser ones too.
        config.option.loadscopereorder = False
        self._units: dict[str, str] = {}

    def schedule(self) -> None:
        if self.collection is None and self.registered_collections:
            self._units = units(list(next(iter(self.registered_collections.values()))))
        super().schedule()

    def _split_scope(self, nodeid: str) -> str:
        return self._units.get(nodeid) or super()._split_scope(nodeid)
