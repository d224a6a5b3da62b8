"""``g6.core``: the faces the knowledge documents name for G6's checked HTTP and outside programs.

Re-exports only: ``g6.core.http`` is :mod:`g6.compat.http` (the checked client with a plain-function
transport), ``g6.core.outside`` is :mod:`g6.fetch.outside` (a program the person runs on this machine).
Nothing in the library imports this package.
"""
