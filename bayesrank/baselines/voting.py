"""(family module; filled in by the baselines work)."""
