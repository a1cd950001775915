"""pytest plugins the whole suite loads (pyproject's addopts): the session's
PostgreSQL and Redis (`servers`), fixtures, the per-test timeout, the people
the tests sign in as, the live server, Chromium; and how the modules are
spread over pytest-xdist's workers (`scheduling`)."""
