"""The Elasticsearch reader's face, as its document names it (code: :mod:`g6.compat.ctx_elastic`)."""

from g6.compat.ctx_elastic import ElasticError, ElasticIndex, Hit, Searched, elastic, reply_for

__all__ = ["ElasticError", "ElasticIndex", "Hit", "Searched", "elastic", "reply_for"]
