#!/usr/bin/env bash
# One short GPU run (under 8 minutes on one H200): the CUDA tests, then bench/studies/gpu.py (updates
# eager, compiled and with CUDA graphs, fp32 and bf16; HalfCheetah-v5 with 10 seeds vmapped and
# with 1), everything under OUT as JSON and a PNG, gpu.py's output in OUT/gpu-log.txt.
# A failing test does not stop the benchmark (both are results); the exit status says it failed.
#
#     bash bench/studies/gpu.sh OUT                      # on a machine with a GPU
#     bash bench/studies/gpu.sh OUT --device cpu --tiny  # the CPU dry run (the tests run it)
set -uo pipefail
out=${1:?usage: bench/studies/gpu.sh OUT [--device DEVICE] [--tiny] [gpu.py options]}
shift
out=$(mkdir -p "$out" && cd "$out" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)  # the repository
python=${PYTHON:-python}  # the interpreter with funcsac installed
tests=(tests/test_priority.py tests/test_compile.py tests/test_driver.py)
if [[ " $* " == *" --tiny "* ]]; then tests=(tests/test_priority.py); fi
# the tests that run on CUDA where there is one (they skip without it)
(cd "$root" && "$python" -m pytest -q -rs -k cuda -p no:cacheprovider "${tests[@]}") \
    > "$out/cuda-tests.txt" 2>&1
tests_rc=$?
tail -1 "$out/cuda-tests.txt"
(cd "$root" && "$python" -m bench.studies.gpu "$out" "$@") 2>&1 | tee "$out/gpu-log.txt"
bench_rc=$?
if ((tests_rc != 0)); then tail -30 "$out/cuda-tests.txt"; exit "$tests_rc"; fi
exit "$bench_rc"
