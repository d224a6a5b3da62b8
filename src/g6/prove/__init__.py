"""Proving what the ledger holds to someone who does not trust the home.

``proofs`` (checkpoints, inclusion and consistency proofs over a home's ledger), ``verify_since``
(``g6 ledger verify --since``: only what is new since a kept checkpoint), ``bundle`` (an evidence
bundle: made from a manifest, verified offline).
"""
