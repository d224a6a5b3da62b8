"""``g6.core``: the faces the knowledge documents name for G6's checked HTTP and outside programs.

``g6.core.http`` is the checked client (``g6.adapters.checked_client``) with a plain-function
transport; ``g6.core.outside`` calls a program the person runs on this machine (Elasticsearch).
"""
