"""``g6.knowledge``: the knowledge fetcher and the Elasticsearch reader as their documents name them.

Re-exports only (the seed documents' import paths); the code is in :mod:`g6.compat`, and nothing in
the library imports this package.
"""
