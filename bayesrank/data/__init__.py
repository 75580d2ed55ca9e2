"""The data layer: validated response tensors, their reductions, and file formats.

:class:`ResponseData` validates once and is immutable; ``data.reductions``
(:mod:`.reductions`) computes success/category counts, pairwise W/T,
question-level preferences and setwise events once and caches them;
:mod:`.io` reads and writes every supported format (atomically);
:mod:`.signals` reads per-completion signal tables for categorical schemes.
"""

from bayesrank.data.response import ResponseData, as_response_data

__all__ = ["ResponseData", "as_response_data"]
