"""runx web-fetch's face (code: :mod:`g6.compat.web_fetch`)."""

from g6.compat.web_fetch import (
    ANY_HOST,
    INPUTS,
    WebFetchInputError,
    check_inputs,
    fetch_result,
    policy_for,
    runx_args,
    web_fetch,
)

__all__ = ["ANY_HOST", "INPUTS", "WebFetchInputError", "check_inputs", "fetch_result", "policy_for", "runx_args",
           "web_fetch"]
