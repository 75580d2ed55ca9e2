"""PyMC generative ranking models, one module per family (installed as ``bayesrank.models``)."""
