"""The 3PL's one-sided intercepts measured from their walls, against plainly non-centred.

Issue 9, sixth round (docs/samplers.md): on a real set the 3PL is fitted
twice in one run, with today's parameterisation (the intercepts of questions
no model or every model solves sampled by their distance from the data's
wall, :class:`bayesrank.models.transforms.ItemEffects`) and with those
intercepts plainly non-centred (``IrtOptions(walls=False)``, the
parameterisation before), both compiled the way ``bayesrank.fit`` compiles
them and sampled with nutpie, 4 chains x (draws tune + draws), the 3PL's
default ``target_accept``.  Both target the same posterior; it reports wall
time, step size, leapfrog steps per draw, the worst R-hat and the smallest
bulk / tail ESS over every reported variable, and the ratio of wall times.

Run: ``python benchmarks/bench_walls.py [--set reasoning_gym_hard] [--every 1]
[--draws 1000]`` (the full-size Reasoning Gym hard pair takes about 50 minutes
on 2 cores).  The table is printed and written to ``bench-results/bench_walls.csv``.
"""

from __future__ import annotations

import argparse
import warnings

import pandas as pd
from bayesrank.models import MODELS, irt
from bench_models_real import OUT, every_kth_question, load_real_sets, measure

#: Reads the real sets in ../shared/data: run_all.py skips it where they are absent.
NEEDS_SHARED_DATA = True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="reasoning_gym_hard")
    parser.add_argument("--every", type=int, default=1, help="keep every k-th question only")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    data = every_kth_question(load_real_sets()[args.set], args.every)
    spec = MODELS["3pl"]
    prepared = irt.IrtData.of(data, "3pl")  # as spec.build(data) prepares them
    rows = []
    for version, walls in (("from walls", True), ("non-centred", False)):
        options = irt.IrtOptions(likelihood=irt.DEFAULT_LIKELIHOOD["3pl"], walls=walls)
        model = irt.three_pl(prepared, options)
        row = {"data": args.set, "shape": "x".join(map(str, data.R.shape)),
               "one-sided intercepts": version}
        row.update(measure(model, target_accept=spec.target_accept, draws=args.draws,
                           seed=args.seed))
        rows.append(row)
        print(row, flush=True)
    table = pd.DataFrame(rows)
    table["wall ratio (non-centred / walls)"] = table["wall_s"].iloc[1] / table["wall_s"].iloc[0]
    OUT.mkdir(exist_ok=True)
    table.to_csv(OUT / "bench_walls.csv", index=False)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.4g}"))


if __name__ == "__main__":
    main()
