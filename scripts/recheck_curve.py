"""The similarity curve behind re-check's ``changed`` threshold (docs/commands/cite.md).

For quotes of N words with one word edited, the similarity of the best-matching span
(``g6.cite.passages.align``) as the paragraph around the quote grows, next to the old measure (difflib
ratio against the whole paragraph); and the noise floor: the best span for a quote that is not on
the page at all. Deterministic (seeded). Run: ``python scripts/recheck_curve.py``.
"""

from __future__ import annotations

import random
from difflib import SequenceMatcher

from g6.cite.passages import align, normalise
from g6.cite.recheck import CHANGED_THRESHOLD, MIN_WORD_OVERLAP

WORDS = ("the council survey households energy supplier price change report district rural study year people "
         "market offer bill quarter rose fell share analysts weighted answers online tariff service green "
         "contract winter spring region volume figure table results follow planned higher lower most others").split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def words(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(WORDS) for _ in range(n)]


def main() -> None:
    rng = random.Random(15)
    lengths = (3, 5, 8, 12, 20, 40, 80)
    contexts = (0, 6, 30)  # sentences of 12 words around the quote
    print("one-word edit (a number, '12%' -> '21%'): similarity of the best span | old: difflib vs paragraph")
    print("quote words | " + " | ".join(f"in {c} sentences" for c in contexts) + " | " +
          " | ".join(f"old, {c} sentences" for c in contexts))
    for n in lengths:
        q = words(rng, n - 1)
        q.insert(n // 2, "12%")
        quote = " ".join(q)
        edited = quote.replace("12%", "21%")
        new, old = [], []
        for c in contexts:
            before = " ".join(sentence(rng, 12) for _ in range(c // 2))
            after = " ".join(sentence(rng, 12) for _ in range(c - c // 2))
            para = f"{before} {edited} {after}".strip()
            a = align(quote, para)
            assert a is not None
            new.append(a.similarity)
            old.append(round(SequenceMatcher(None, normalise(quote), normalise(para), autojunk=False).ratio(), 4))
        print(f"{n:>11} | " + " | ".join(f"{x:.4f}" for x in new) + " | " + " | ".join(f"{x:.4f}" for x in old))
    print()
    print("one word replaced by another word (e.g. 'price' -> 'cost'): similarity of the best span")
    print("quote words | " + " | ".join(f"in {c} sentences" for c in contexts))
    for n in lengths:
        q = words(rng, n)
        edited = list(q)
        edited[n // 2] = "contract" if q[n // 2] != "contract" else "winter"
        sims = []
        for c in contexts:
            before = " ".join(sentence(rng, 12) for _ in range(c // 2))
            after = " ".join(sentence(rng, 12) for _ in range(c - c // 2))
            a = align(" ".join(q), f"{before} {' '.join(edited)} {after}".strip())
            assert a is not None
            sims.append(f"{a.similarity:.4f}")
        print(f"{n:>11} | " + " | ".join(sims))
    print()
    print("noise floor: best span for a quote that is not on the page (page of K sentences of the same vocabulary)")
    print("quote words | " + " | ".join(f"page {k} sentences" for k in (6, 30, 120)) + " | passes both thresholds?")
    for n in lengths:
        quote = " ".join(words(rng, n))
        sims, passes = [], []
        for k in (6, 30, 120):
            page = " ".join(sentence(rng, 12) for _ in range(k))
            a = align(quote, page)
            assert a is not None
            sims.append(f"{a.similarity:.4f} ({a.word_overlap:.2f})")
            passes.append(a.similarity >= CHANGED_THRESHOLD and a.word_overlap >= MIN_WORD_OVERLAP)
        print(f"{n:>11} | " + " | ".join(sims) + f" | {'yes' if any(passes) else 'no'}")
    print(f"\nthresholds: similarity >= {CHANGED_THRESHOLD}, word overlap >= {MIN_WORD_OVERLAP}")


if __name__ == "__main__":
    main()
