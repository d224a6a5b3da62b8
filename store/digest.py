"""Digest value type: ``"<algo>:<lowercase hex>"``, the only form digests are written in."""

from __future__ import annotations

import re
from dataclasses import dataclass

from g6.errors import BadDigest

ALGORITHMS = {"blake3": 64, "sha256": 64}
_HEX = re.compile(r"^[0-9a-f]+$")


@dataclass(frozen=True, slots=True)
class Digest:
    algo: str
    hex: str

    @classmethod
    def parse(cls, text: str) -> Digest:
        if not isinstance(text, str) or ":" not in text:
            raise BadDigest(f"not a digest (want 'blake3:<hex>' or 'sha256:<hex>'): {text!r}")
        algo, _, hexpart = text.partition(":")
        algo = algo.strip().lower()
        hexpart = hexpart.strip().lower()
        want = ALGORITHMS.get(algo)
        if want is None:
            raise BadDigest(f"unknown digest algorithm {algo!r}; known: {', '.join(sorted(ALGORITHMS))}")
        if len(hexpart) != want or not _HEX.match(hexpart):
            raise BadDigest(f"{algo} digest must be {want} hex characters: {text!r}")
        return cls(algo, hexpart)

    def __str__(self) -> str:
        return f"{self.algo}:{self.hex}"
