"""localrag: a local-first assistant for personal documents."""

from localrag import offline as _offline

_offline.enforce_env()

__version__ = "0.1.0"
