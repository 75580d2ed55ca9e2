"""Deterministic ranking rules of the paper, one module per family.

Importing this package registers every identifier with :mod:`bayesrank.registry`.
"""

from bayesrank.baselines import graph, irt, luce, metrics, paired, ratings, voting

__all__ = ["graph", "irt", "luce", "metrics", "paired", "ratings", "voting"]
