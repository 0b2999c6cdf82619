"""All SQL lives in this package."""

from localrag.store.connection import StoreError, connect, driver_name
from localrag.store.db import EmbedderMismatch, Store

__all__ = ["EmbedderMismatch", "Store", "StoreError", "connect", "driver_name"]
