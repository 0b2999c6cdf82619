"""localrag: a local-first assistant for personal documents."""

import logging as _logging

from localrag import offline as _offline

_offline.enforce_env()
# silent unless asked (--verbose, LOCALRAG_LOG: localrag/logs.py); no last-resort printing on stderr
_logging.getLogger("localrag").addHandler(_logging.NullHandler())

__version__ = "0.1.0"
