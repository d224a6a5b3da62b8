"""A full verify streams its rows: peak memory of a verifying process stays flat as the ledger grows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from g6.ledger import Ledger, Receipt, SigningKey

SCRIPT = r"""
import resource, sys
from pathlib import Path
from g6.ledger import Ledger, VerifyKey

def main():
    ledger = Ledger(Path(sys.argv[1]))
    key = VerifyKey.from_text(sys.argv[2])
    report = ledger.verify({key.key_id: key}, workers=int(sys.argv[3]))
    assert report.ok and report.rows == int(sys.argv[4]), report.to_json()
    # VmHWM starts afresh at exec; ru_maxrss would carry the forking parent's (pytest's) high-water mark
    try:
        print(next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:")))
    except OSError:
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KiB on Linux

if __name__ == "__main__":
    main()
"""


def peak_kib(path: Path, key: SigningKey, rows: int, workers: int) -> int:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(path), key.public.to_text(), str(workers), str(rows)],
                         capture_output=True, text=True, check=True, timeout=600)
    return int(out.stdout.split()[-1])


@pytest.mark.slow
def test_verify_memory_is_flat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = SigningKey.generate()
    small, big = tmp_path / "small.sqlite", tmp_path / "big.sqlite"
    body = "x" * 600  # receipts of a realistic size, so keeping rows in memory would show
    for path, n in ((small, 2_000), (big, 24_000)):
        with Ledger(path) as ledger:
            for i in range(0, n, 4000):
                ledger.append_many([Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{j}"},
                                            outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=j,
                                            detail={"pad": body}) for j in range(i, min(n, i + 4000))], key)
    small_kib = peak_kib(small, key, 2_000, 1)
    big_kib = peak_kib(big, key, 24_000, 1)
    # 24,000 rows of ~1 KiB would be ~23 MiB of text alone, more as Python objects
    assert big_kib - small_kib < 20 * 1024, (small_kib, big_kib)
    assert big_kib < 200 * 1024
