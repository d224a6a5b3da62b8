from __future__ import annotations

import time
from collections.abc import Callable


def line(name: str, ours: float, ref: float, unit: str, *, higher_is_better: bool = True) -> None:
    ratio = ours / ref if higher_is_better else ref / ours
    print(f"{name:<44} ours {ours:>12,.1f} {unit:<10} reference {ref:>12,.1f} {unit:<10} ratio {ratio:5.2f}")


def best_time(fn: Callable[[], object], repeat: int = 3) -> float:
    """The fastest of ``repeat`` runs of ``fn``, in seconds (the least disturbed by other jobs)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best
