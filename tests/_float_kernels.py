"""Which floating-point kernels this process computes with, for bit-for-bit snapshots.

A result frozen bit for bit on one machine is reproducible only where the same kernels run:
NumPy dispatches its exp, log, sums and divisions to SIMD code chosen by the CPU at run
time (AVX-512 and AVX2 kernels round differently in the last bit), OpenBLAS picks a core-
specific GEMM, and Numba compiles for the host CPU. Measured on 2026-12-05 (AMD EPYC,
AVX-512), with NumPy's AVX-512 dispatch switched off (``NPY_DISABLE_CPU_FEATURES``) and
Numba targeting Haswell: the closed-form rules of ``tests/rule_snapshot.npz`` moved by at
most 1.4e-14 relative, the IRT optimisers by up to their stopping test (the 3PL joint ML
2.9e-6, the Rasch MAP 6.8e-8 on LiveCodeBench, measured again that evening), and the 2PL
MAP on the LiveCodeBench case swapped two models' nearly equal abilities (a symmetric pair
of optima). The CI run of 2026-12-04 failed these bit-for-bit comparisons on a machine
other than the one that wrote the snapshots (its CPU was not recorded); the same
comparisons fail here with AVX-512 switched off as above.

The snapshots record the kernels they were written with (:data:`SNAPSHOT_KERNELS`); their
bit-for-bit tests run where :func:`kernels` matches and skip, naming the difference,
elsewhere.  Tolerance tests against the same snapshots run on every machine.
"""

from __future__ import annotations

import os

#: The kernels of the machine that wrote ``rule_snapshot.npz`` and ``slow_rules.npz``.
SNAPSHOT_KERNELS = {"numpy": "AVX512_ICL", "openblas": "SkylakeX", "numba": "znver4"}

#: NumPy's dispatch targets, best first (the ones that change rounding on x86-64).
_NUMPY_TARGETS = ("AVX512_SPR", "AVX512_ICL", "AVX512_CNL", "AVX512_CLX", "AVX512_SKX",
                  "AVX512F", "AVX2", "AVX", "SSE42")


def kernels() -> dict[str, str]:
    """The best NumPy SIMD target in use, OpenBLAS's core and Numba's target CPU."""
    import numba
    import threadpoolctl
    from numpy._core._multiarray_umath import __cpu_features__

    numpy_target = next((t for t in _NUMPY_TARGETS if __cpu_features__.get(t)), "baseline")
    blas = [i.get("architecture", "?") for i in threadpoolctl.threadpool_info()
            if i.get("internal_api") == "openblas"]
    cpu = numba.config.CPU_NAME or os.environ.get("NUMBA_CPU_NAME")
    if not cpu:
        import llvmlite.binding as llvm

        cpu = llvm.get_host_cpu_name()
    return {"numpy": numpy_target, "openblas": blas[0] if blas else "none", "numba": cpu}


def bit_exact_skip_reason() -> str | None:
    """None where this process runs the snapshots' kernels, else why bits may differ."""
    here = kernels()
    differ = [f"{k} {here[k]} (snapshot: {v})" for k, v in SNAPSHOT_KERNELS.items()
              if here[k] != v]
    if not differ:
        return None
    return ("bit-for-bit snapshot written with other floating-point kernels: "
            + ", ".join(differ) + "; the tolerance tests still run")
