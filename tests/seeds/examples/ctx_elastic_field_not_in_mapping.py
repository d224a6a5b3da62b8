from g6.core import outside
from g6.knowledge.ctx_elastic import elastic


def server(program, method, path, **_):  # your Elasticsearch, in this example: its index holds title and body
    body = b'{"handbook": {"mappings": {"properties": {"title": {"type": "text"}, "body": {"type": "text"}}}}}'
    return outside.ServiceReply(200, {}, body)


try:
    elastic.search("handbook", "parental leave", fields=["content"], caller=server)
except elastic.ElasticError as refused:  # a field the index does not hold: refused, never "no hits"
    assert refused.code == "G6_E_KNOWLEDGE_FIELD_NOT_IN_MAPPING" and "body (text)" in refused.reason
