"""robots.txt rules per RFC 9309, parsed by protego, cached per origin.

RFC 9309 §2.3.1: a 4xx answer means no rules (all allowed); a 5xx answer or an unreachable
server means complete disallow; at most 500 KiB is parsed; at least five redirects are followed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from protego import Protego

ROBOTS_MAX_BYTES = 500 * 1024


@dataclass(frozen=True, slots=True)
class RobotsRules:
    origin: str
    state: str  # "parsed" | "allow_all" (4xx) | "disallow_all" (5xx / unreachable)
    status: int | None
    detail: str = ""
    _parser: Protego | None = None

    def allows(self, url: str, user_agent: str) -> bool:
        if self.state == "allow_all":
            return True
        if self.state == "disallow_all" or self._parser is None:
            return False
        return bool(self._parser.can_fetch(url, user_agent))

    def to_json(self) -> dict[str, object]:
        return {"origin": self.origin, "state": self.state, "status": self.status, "detail": self.detail}


def rules_from_answer(origin: str, status: int | None, body: bytes, detail: str = "") -> RobotsRules:
    if status is None:
        return RobotsRules(origin, "disallow_all", None, detail or "unreachable")
    if 200 <= status < 300:
        text = body[:ROBOTS_MAX_BYTES].decode("utf-8", errors="replace")
        return RobotsRules(origin, "parsed", status, detail, Protego.parse(text))
    if 300 <= status < 500:
        # 4xx: no rules. A 3xx here means the redirect limit was hit: "unavailable", as 4xx.
        return RobotsRules(origin, "allow_all", status, detail)
    return RobotsRules(origin, "disallow_all", status, detail or "server error")


class RobotsCache:
    def __init__(self, ttl: float = 24 * 3600, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._rules: dict[str, tuple[float, RobotsRules]] = {}

    def get(self, origin: str) -> RobotsRules | None:
        hit = self._rules.get(origin)
        if hit is None or self._clock() - hit[0] > self._ttl:
            return None
        return hit[1]

    def put(self, rules: RobotsRules) -> None:
        self._rules[rules.origin] = (self._clock(), rules)
