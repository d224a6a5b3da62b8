"""``g6.knowledge._index.index_backends``: the index backends a retriever can read, read only.

Only ``elastic`` (``g6.knowledge.ctx_elastic.ElasticIndex``, an Elasticsearch the person runs)
exists in g6-evidence; the mapping cannot be changed at run time.
"""

from __future__ import annotations

from types import MappingProxyType

from g6.compat.ctx_elastic import ElasticIndex

index_backends = MappingProxyType({"elastic": ElasticIndex})
