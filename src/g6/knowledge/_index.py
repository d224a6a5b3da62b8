"""``g6.knowledge._index.index_backends`` as its document names it (code: :mod:`g6.compat._index`)."""

from g6.compat._index import index_backends

__all__ = ["index_backends"]
