from __future__ import annotations

import statistics
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


def line_by_rounds(name: str, n: int, ours: list[float], ref: list[float], unit: str, extra: str = "") -> None:
    """Interleaved rounds: ``ours[i]`` and ``ref[i]`` are the seconds each took for ``n`` units in round
    ``i``. The best round's figures, then every round's ratio in the order they ran and their median
    (and ``extra``, after a semicolon)."""
    ratios = [r / o for o, r in zip(ours, ref, strict=True)]
    best = max(range(len(ratios)), key=ratios.__getitem__)
    line(name, n / ours[best], n / ref[best], unit)
    print(f"{'':<44} ratios by round {', '.join(f'{r:.2f}' for r in ratios)} (median "
          f"{statistics.median(ratios):.2f})" + (f"; {extra}" if extra else ""))
