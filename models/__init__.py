"""PyMC generative ranking models, one module per family (installed as ``bayesrank.models``).

Every model exposes its ranking quantity as the variable ``theta`` (dim
``llm``, larger is better) and reads sufficient statistics from
``data.reductions``.  :data:`MODELS` maps the identifiers accepted by
:func:`bayesrank.fit` to their builders:

================  ==========================================  ====================
identifier        model                                       observed variable
================  ==========================================  ====================
``bayes``         Dirichlet-multinomial Bayes@N               ``counts``
``rasch``         hierarchical Rasch (1PL), binomial          ``k``
``2pl``           hierarchical 2PL                            ``k``
``3pl``           hierarchical 3PL, beta-binomial             ``k``
``bradley_terry`` Bradley-Terry (``ties="davidson"``: ties)   ``wins`` / ``outcomes``
``davidson``      Bradley-Terry with Davidson ties            ``outcomes``
``davidson_luce`` Davidson-Luce on setwise events             ``events``
================  ==========================================  ====================

On battles loaded with covariates (``bayesrank.from_battles(frame, covariates=[...])``)
``bradley_terry`` and ``davidson`` are the contextual ("style control") models of
:mod:`models.contextual`, observed per battle (``a_wins`` / ``outcomes``), with the
covariates' coefficients ``beta``.

Every model is generative with proper priors (``pm.sample_prior_predictive`` draws its
prior): the reparameterisations sampling needs are PyMC transforms of declared
variables (:mod:`models.transforms`), and the count likelihoods are one call each
(:mod:`models.likelihoods`), computed by the kernels of :mod:`models.fast` unless the
model is built with ``build(name, data, fast=False)``, which uses PyMC's own
distributions only (the same model: ``tests/test_fast_path.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import Any

import pymc as pm

from bayesrank.errors import UnknownMethodError

from . import bayes, bradley_terry, contextual, davidson_luce, irt
from ._common import scoring_model
from .likelihoods import fast_kernels

__all__ = [
    "MODELS",
    "ModelSpec",
    "build",
    "get_model",
    "bayes",
    "bradley_terry",
    "contextual",
    "davidson_luce",
    "irt",
    "scoring_model",
]


@dataclass(frozen=True)
class ModelSpec:
    """One named model: its builder, likelihood variable and capabilities."""

    name: str
    builder: Callable[..., pm.Model]
    description: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    # all data live in pm.Data containers (every model); batchable: of shapes that depend on
    # (L, M, N) only, so that data sets of one shape stack into one batch (fit_many)
    batchable: bool = True
    target_accept: float = 0.8  # NUTS adaptation target used when fit() is given none
    exact_draws: Callable[..., dict] | None = None  # exact posterior sampler ("conjugate")

    def build(self, data: Any, fast: bool = True, **options: Any) -> pm.Model:
        """The model of ``data``; ``fast=False``: the same model with PyMC's own
        distributions in place of bayesrank's kernels (:mod:`models.likelihoods`)."""
        with fast_kernels(fast):
            return self.builder(data, **{**self.defaults, **options})

    def observed_var(self, model: pm.Model) -> str:
        """The likelihood variable (prior-run observations such as ``k0`` excluded)."""
        names = [rv.name for rv in model.observed_RVs if rv.name != "k0"]
        return names[0]


def _spec(
    name: str,
    builder: Callable[..., pm.Model],
    description: str,
    batchable: bool = True,
    target_accept: float = 0.8,
    **defaults: Any,
) -> ModelSpec:
    return ModelSpec(
        name, builder, description, MappingProxyType(defaults), batchable, target_accept)


MODELS: Mapping[str, ModelSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            ModelSpec(
                "bayes", bayes.build, "Bayes@N Dirichlet-multinomial (closed form exists)",
                MappingProxyType({}), exact_draws=bayes.conjugate_draws,
            ),
            _spec("rasch", partial(irt.build, kind="rasch"), "hierarchical Rasch (1PL)"),
            _spec("2pl", partial(irt.build, kind="2pl"), "hierarchical 2PL IRT"),
            _spec(
                "3pl",
                partial(irt.build, kind="3pl"),
                "hierarchical 3PL IRT (beta-binomial: over-dispersed cells)",
            ),
            _spec("bradley_terry", bradley_terry.build, "Bayesian Bradley-Terry on pairwise wins"),
            _spec(
                "davidson",
                bradley_terry.build,
                "Bayesian Bradley-Terry with Davidson ties",
                ties="davidson",
            ),
            _spec(
                "davidson_luce",
                davidson_luce.build,
                "Davidson-Luce on setwise events",
                batchable=False,  # the number of distinct events differs between data sets
            ),
        )
    }
)


def get_model(name: str) -> ModelSpec:
    """The :class:`ModelSpec` registered as ``name`` (UnknownMethodError lists the choices)."""
    try:
        return MODELS[name]
    except (KeyError, TypeError):
        raise UnknownMethodError(
            f"unknown model {name!r}; choose one of {', '.join(MODELS)}"
        ) from None


def build(name: str, data: Any, fast: bool = True, **options: Any) -> pm.Model:
    """Build model ``name`` for ``data`` (options are passed to its builder).

    ``fast=True`` (default): the count likelihoods and the one-sided intercepts' wall map
    are bayesrank's kernels (:mod:`models.fast`); ``fast=False``: the same model, the same
    variables and log-density, with plain PyMC only (:mod:`models.likelihoods`).
    """
    return get_model(name).build(data, fast=fast, **options)
