"""Is a difference between two runs beyond the run-to-run spread? (`stopbench compare`)

Event anchors freeze the world at the anchor, so what the world decides comes out the same in every
repetition; what the framework decides after the stop need not: a stop that is read at the next streamed
chunk lets through as many tokens as the subject took to react (load moves that), parallel calls sent
just before or just after the press split between "in flight" and "new", a checkpoint written on another
thread is there or not. Within one run such a trial cell's repetitions already disagree. Two runs are
then compared the way pyperf compares two benchmarks: a difference counts as a change only when it is
unlikely to be such spread.

The test: a stratified permutation test. Rows are grouped by trial cell (scenario x offset x tool style,
the same conditions on both sides); the statistic is the sum over cells of (mean new - mean old); its
distribution under "same behaviour" comes from relabelling old/new within each cell (ROUNDS times, a fixed
seed, so a comparison prints the same p every time). Two-sided p below ALPHA: changed.

With 3 repetitions a side, one cell alone can never reach ALPHA (the smallest p of 3 vs 3 is 0.1): a change
is seen when it shows in several cells of a row; a row whose cells disagree within a run shows its spread
in the table (`median (min..max)`), and the reproducibility figures (`stopbench agree`) name such cells.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable

#: a difference whose two-sided p is below this is a change (about a thousand tests in a full comparison:
#: one false change in a thousand equal rows at most, on average)
ALPHA = 0.001
#: relabellings per test: p is resolved to 1/(ROUNDS + 1), well below ALPHA
ROUNDS = 4000
SEED = 0


def shift_p(old: Iterable[tuple[Hashable, float]], new: Iterable[tuple[Hashable, float]],
            rounds: int = ROUNDS, seed: int = SEED) -> float:
    """Two-sided p of the within-cell shift from `old` to `new`, each an iterable of (cell, value).
    1.0 when no cell has values on both sides that differ."""
    import numpy as np

    sides: dict[Hashable, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for cell, value in old:
        sides[cell][0].append(float(value))
    for cell, value in new:
        sides[cell][1].append(float(value))
    rng = np.random.default_rng(seed)
    observed = 0.0
    relabelled = np.zeros(rounds)
    varied = False
    for cell in sorted(sides, key=repr):  # a fixed order: the same draws for the same input
        a, b = sides[cell]
        if not a or not b:
            continue  # a cell one side has no value in: nothing to compare it with
        pooled = np.array(a + b)
        if pooled.min() == pooled.max():
            continue
        varied = True
        observed += float(np.mean(b) - np.mean(a))
        picks = rng.permuted(np.tile(pooled, (rounds, 1)), axis=1)[:, :len(b)].sum(axis=1)
        relabelled += picks / len(b) - (pooled.sum() - picks) / len(a)
    if not varied:
        return 1.0
    extreme = int(np.sum(np.abs(relabelled) >= abs(observed) - 1e-9))
    return (1 + extreme) / (rounds + 1)


def beyond_spread(p: float) -> bool:
    return p < ALPHA
