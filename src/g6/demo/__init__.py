"""``g6 demo``: the demo (``run``), the loopback site it and the tests serve (``site``), its ``pages``."""
