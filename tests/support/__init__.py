"""What the tests share, by what it is:

* `plugins/`: the pytest plugins pyproject.toml's ``addopts`` loads by name
  (the session's PostgreSQL and Redis, fixtures, the per-test timeout, the
  people, the live server, headless Chromium) and the scheduling of modules
  over pytest-xdist's workers;
* `services/`: the server processes the tests start (PostgreSQL, Redis,
  Daphne, nginx);
* here: the helpers a test imports — the WebSocket client (`communicators`),
  waiting without sleeping (`waiting`), answers and turns, refusals, threads,
  the import checker (`layers`) and the translation checker (`i18n_lint`).
"""
