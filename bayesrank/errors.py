"""Exceptions raised by bayesrank.

Every error a user can trigger with bad input is a ``ValueError`` subclass, so
``except ValueError`` keeps working, while the subclasses let callers react to
one kind of problem.
"""

from __future__ import annotations


class BayesrankError(Exception):
    """Base class of every bayesrank-specific error."""


class DataError(BayesrankError, ValueError):
    """The response data are malformed: shape, values, names or missing cells."""


class LoadError(DataError):
    """A file could not be read or does not hold what it should."""


class DisconnectedGraphError(BayesrankError, ValueError):
    """The comparison graph is not connected, so strengths are not identified."""


class NotIdentifiedError(BayesrankError, ValueError):
    """The maximum-likelihood estimate does not exist (e.g. a model never loses)."""


class UnknownMethodError(BayesrankError, KeyError):
    """A ranking method or model identifier is not known."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class MissingDependencyError(BayesrankError, ImportError):
    """An optional dependency needed for the requested feature is not installed."""


class CovariatesIgnoredWarning(UserWarning):
    """A deterministic rule ranked battles that carry covariates without them (only
    :func:`bayesrank.fit`'s contextual models hold covariates equal)."""
