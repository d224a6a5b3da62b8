"""``g6 ledger verify``: the whole ledger or ``--since`` a checkpoint, row ranges on every core, each blob a
receipt names, checkpoints kept elsewhere."""
