"""Run every benchmark script in this folder (``make bench``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        if script.name.endswith("_gpu.py"):
            continue  # needs a GPU machine; run it there directly
        print(f"\n=== {script.name} ===", flush=True)
        if subprocess.run([sys.executable, str(script)]).returncode != 0:
            failed.append(script.name)
    if failed:
        sys.exit(f"benchmarks failed: {failed}")
