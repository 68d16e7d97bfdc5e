#!/usr/bin/env bash
# Run tests as if on another CPU: CI's runners differ from a contributor's machine, and
# results of long iterative runs (a 3000-evaluation optimizer, an SGD trajectory) can
# change in their leading digits when a kernel sums in another order. The environment
# below swaps the kernels of every numerical library the packages use for those another
# x86-64 CPU would pick; a check that fails here only is one that depends on the CPU.
#
#   tools/other_cpu.sh                  # README doctests, emulation a
#   tools/other_cpu.sh -e b             # README doctests, emulation b (or c)
#   tools/other_cpu.sh --all            # README doctests + fast tests (no wheel tests)
#   tools/other_cpu.sh --probe          # show that the kernels changed (hashes of results)
#   tools/other_cpu.sh -e b packages/foo   # any pytest arguments
#   tools/other_cpu.sh -e b --run python x.py   # any command, under `uv run` (torch threads: the machine's)
#   tools/other_cpu.sh --compare-readmes [README ...]  # README outputs that move with the CPU at all
#
# Checked on an AVX-512 AMD EPYC with --probe (result hashes with and without each
# variable): these change results: NPY_DISABLE_CPU_FEATURES (numpy's exp/log loops),
# OPENBLAS_CORETYPE (gemm/LU kernels of numpy's and scipy's OpenBLAS), ATEN_CPU_CAPABILITY
# and ONEDNN_MAX_CPU_ISA (torch's conv2d), MKL_CBWR=COMPATIBLE (torch matmul), XLA_FLAGS
# --xla_cpu_max_isa=SSE4_2 or AVX (jax exp), and the thread counts (OpenBLAS's gemm and
# torch's sums split by thread). No effect there, kept for Intel CPUs where MKL dispatches
# on the ISA: MKL_ENABLE_INSTRUCTIONS, MKL_CBWR=AVX/AVX512, --xla_cpu_max_isa=AVX2.
# OpenBLAS and OpenMP use no more threads than there are cores; torch can
# (tools/other_cpu_threads.py sets ICML26_TORCH_THREADS after import).
set -euo pipefail
cd "$(dirname "$0")/.."

emulation=a
mode=readme
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        -e) emulation="$2"; shift 2 ;;
        --all) mode=all; shift ;;
        --probe) mode=probe; shift ;;
        --run) mode=run; shift; args=("$@"); break ;;
        --compare-readmes) mode=compare; shift ;;
        *) args+=("$1"); shift ;;
    esac
done

if [ "$mode" = compare ]; then  # README outputs natively and under a, b, c; print what moved
    dir=$(mktemp -d)
    uv run python tools/readme_outputs.py record "$dir/native.json" ${args[@]+"${args[@]}"}
    for e in a b c; do
        "$0" -e "$e" --run python tools/readme_outputs.py record "$dir/$e.json" ${args[@]+"${args[@]}"}
    done
    exec uv run python tools/readme_outputs.py compare "$dir"/{native,a,b,c}.json
fi

case "$emulation" in
    a)  # an AVX2-only CPU, one thread everywhere
        export NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL"
        export OPENBLAS_CORETYPE=Sandybridge
        export ATEN_CPU_CAPABILITY=default
        export ONEDNN_MAX_CPU_ISA=AVX2
        export MKL_ENABLE_INSTRUCTIONS=AVX2
        export MKL_CBWR=COMPATIBLE
        export XLA_FLAGS="--xla_cpu_max_isa=SSE4_2"
        export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
        ;;
    b)  # an older CPU without AVX2 in numpy and OpenBLAS, torch AVX2 on three threads
        export NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL"
        export OPENBLAS_CORETYPE=Nehalem
        export ATEN_CPU_CAPABILITY=avx2
        export ONEDNN_MAX_CPU_ISA=AVX2
        export MKL_CBWR=AVX
        export XLA_FLAGS="--xla_cpu_max_isa=AVX"
        export ICML26_TORCH_THREADS=3
        ;;
    c)  # an AVX-512 Intel Xeon: OpenBLAS's Skylake-X kernels, MKL's AVX-512 path, 3 torch threads
        export OPENBLAS_CORETYPE=SkylakeX
        export MKL_CBWR=AVX512
        export ICML26_TORCH_THREADS=3
        ;;
    *) echo "unknown emulation '$emulation' (a, b or c)" >&2; exit 2 ;;
esac
export PYTHONPATH="$PWD/tools${PYTHONPATH:+:$PYTHONPATH}"
plugin=(-p other_cpu_threads -p no:cacheprovider)

# Default paths unless an argument names a test path (options alone keep the defaults).
paths_given=0
for a in ${args[@]+"${args[@]}"}; do
    if [ -e "${a%%::*}" ]; then paths_given=1; fi
done
case "$mode" in
    probe) exec uv run python tools/other_cpu_probe.py ;;
    run) exec uv run "${args[@]}" ;;
    readme) defaults=(shared/README.md packages/*/README.md) ;;
    all) defaults=(shared/README.md shared/tests packages integration-tests
                   --ignore=integration-tests/test_wheels.py) ;;
esac
[ "$paths_given" = 1 ] || args=(${args[@]+"${args[@]}"} "${defaults[@]}")
exec uv run pytest -q "${plugin[@]}" "${args[@]}"
