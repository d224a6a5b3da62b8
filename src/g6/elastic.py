"""``g6.elastic``: the import path the first versions of the README named; the code is :mod:`g6.fetch.elastic`."""

from g6.errors import ElasticReadError
from g6.fetch.elastic import EsAnswer
from g6.fetch.elastic import EsIndex as ElasticIndex

__all__ = ["ElasticIndex", "ElasticReadError", "EsAnswer"]
