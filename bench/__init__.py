"""Benchmarks: each prints ours, a reference measured in the same run on the same data, and the ratio."""
