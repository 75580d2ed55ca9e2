"""``bayesrank study`` options for scale: the engine, a Dask scheduler, progress."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bayesrank.study._core import ENGINES

__all__ = ["add_cli_arguments", "run_options"]


def add_cli_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--scheduler``, ``--engine``, ``--quiet``, ``--name`` and ``--fresh`` to
    ``bayesrank study``."""
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run the study's tasks on the Dask scheduler at ADDRESS "
                        "(e.g. tcp://10.0.0.5:8786; needs bayesrank[cluster])")
    parser.add_argument("--engine", default="batched", choices=ENGINES,
                        help="batched (default): reduce all draws at once; reference: the "
                        "per-draw loop (same results, slower)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress on stderr (an updating line on a terminal, "
                        "elsewhere a stage line every 10 s)")
    parser.add_argument("--name", default=None,
                        help="benchmark name for the paper tables (default: --key or file name)")
    parser.add_argument("--fresh", action="store_true",
                        help="discard the checkpoint in OUTPUT/checkpoint and start over "
                        "(by default a rerun of the same study resumes from it)")


def run_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of :func:`bayesrank.study.run_study` from the parsed options."""
    data = getattr(args, "data", None)
    name = args.name or getattr(args, "key", None) or (Path(data).stem if data else None)
    return {"scheduler": args.scheduler, "engine": args.engine,
            "quiet": bool(args.quiet), "name": name,
            "checkpoint": Path(args.output) / CHECKPOINT, "fresh": args.fresh}


#: The folder of ``bayesrank study -o OUTPUT`` that keeps its finished blocks.
CHECKPOINT = "checkpoint"
