from __future__ import annotations


def line(name: str, ours: float, ref: float, unit: str, *, higher_is_better: bool = True) -> None:
    ratio = ours / ref if higher_is_better else ref / ours
    print(f"{name:<44} ours {ours:>12,.1f} {unit:<10} reference {ref:>12,.1f} {unit:<10} ratio {ratio:5.2f}")
