"""All SQL lives in this package."""

from localrag.store.connection import StoreError, connect, driver_name
from localrag.store.db import Store

__all__ = ["Store", "StoreError", "connect", "driver_name"]
