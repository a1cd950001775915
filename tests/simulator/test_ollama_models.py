"""The simulator's Ollama model endpoints (`chat/simulator/ollama_models.py`),
over real HTTP."""

from __future__ import annotations

import httpx

from tests.simulator.asking import PLAIN, THINKER, chat_lines


def test_root_and_version(client: httpx.Client) -> None:
    root = client.get("/")
    assert root.status_code == 200
    assert root.text == "Ollama is running"
    assert client.get("/api/version").json() == {"version": "0.12.6"}


def test_tags_lists_both_models(client: httpx.Client) -> None:
    models = client.get("/api/tags").json()["models"]
    assert [m["name"] for m in models] == [THINKER, PLAIN]
    first = models[0]
    assert first["model"] == THINKER
    assert isinstance(first["size"], int)
    assert len(first["digest"]) == 64
    assert first["modified_at"]
    details = first["details"]
    assert details["format"] == "gguf"
    assert details["family"] == "qwen3"
    assert details["families"] == ["qwen3"]
    assert details["parameter_size"]
    assert details["quantization_level"]


def test_show_reports_capabilities_and_context(client: httpx.Client) -> None:
    body = client.post("/api/show", json={"model": THINKER}).json()
    assert body["capabilities"] == ["completion", "tools", "thinking", "vision"]
    assert body["model_info"]["general.architecture"] == "qwen3"
    assert body["model_info"]["qwen3.context_length"] == 40960
    for key in ("modelfile", "parameters", "template", "details", "modified_at"):
        assert key in body
    plain = client.post("/api/show", json={"model": PLAIN}).json()
    assert plain["capabilities"] == ["completion"]
    assert plain["model_info"]["llama.context_length"] == 8192


def test_show_unknown_model_is_404(client: httpx.Client) -> None:
    response = client.post("/api/show", json={"model": "nope:1b"})
    assert response.status_code == 404
    assert response.json() == {
        "error": 'model "nope:1b" not found, try pulling it first'
    }


def test_ps_lists_a_model_once_used(client: httpx.Client) -> None:
    assert client.get("/api/ps").json() == {"models": []}
    chat_lines(client, options={"num_ctx": 8192})
    (loaded,) = client.get("/api/ps").json()["models"]
    assert loaded["name"] == loaded["model"] == THINKER
    assert loaded["context_length"] == 8192
    assert loaded["size_vram"] == loaded["size"]
    for key in ("digest", "details", "expires_at"):
        assert loaded[key]
