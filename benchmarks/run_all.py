"""Run every benchmark script in this folder (``make bench``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The real benchmark sets of the development checkout (a user's clone has no ../shared).
SHARED_DATA = HERE.parents[1] / "shared" / "data"

if __name__ == "__main__":
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        if script.name.endswith("_gpu.py"):
            continue  # needs a GPU machine; run it there directly
        if "\nNEEDS_SHARED_DATA = True" in script.read_text() and not SHARED_DATA.is_dir():
            print(f"\n=== {script.name}: skipped, it reads the real sets in {SHARED_DATA}, "
                  "which this checkout does not have ===", flush=True)
            continue
        print(f"\n=== {script.name} ===", flush=True)
        if subprocess.run([sys.executable, str(script)]).returncode != 0:
            failed.append(script.name)
    if failed:
        sys.exit(f"benchmarks failed: {failed}")
