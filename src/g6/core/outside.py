"""``g6.core.outside`` as the documents name it (code: :mod:`g6.fetch.outside`)."""

from g6.fetch.outside import Caller, ProgramMissing, ProgramTimeout, ServiceReply, call_service, program_url

__all__ = ["Caller", "ProgramMissing", "ProgramTimeout", "ServiceReply", "call_service", "program_url"]
