#!/bin/sh
# The wheels that run_task.py needs on the GPU machine, which reaches no package
# registry: bench/gpu_sweep/wheels.txt, for its Python (3.12, x86-64, manylinux),
# into .whl/ at the repository's root, which git is told to ignore. Run it here,
# in the checkout that travels, then carry .whl (bench/gpu_sweep/README.md).
set -eu
cd "$(git rev-parse --show-toplevel)"
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >>"$exclude"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    -d .whl -r bench/gpu_sweep/wheels.txt
ls .whl
du -sh .whl
