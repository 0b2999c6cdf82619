"""How a setting's value is read and checked: one word of a mode, a number, a flag, a list.

The settings dataclasses are in config.py and beside each built-in strategy (a settings module); this module
knows nothing of them but their fields.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Any, Literal, get_args, get_origin, get_type_hints

from localrag.errors import LocalragError


class ConfigError(LocalragError, ValueError):
    """A setting has a value that cannot be used."""


def coerce_value(value: Any, current: Any, name: str) -> Any:
    if isinstance(current, enum.Enum):
        kind = type(current)
        if isinstance(value, kind):
            return value
        words = {str(m.value): m for m in kind}
        if str(value) not in words:
            raise ConfigError(f"{name} must be one of {', '.join(words)}; got {value!r}")
        return words[str(value)]
    if isinstance(current, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in {"1", "true", "yes", "on"}:
            return True
        if text in {"0", "false", "no", "off"}:
            return False
        raise ConfigError(f"{name}: expected true/false, got {value!r}")
    if isinstance(current, int):
        try:
            return int(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{name}: expected an integer, got {value!r}") from exc
    if isinstance(current, float):
        try:
            return float(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{name}: expected a number, got {value!r}") from exc
    if isinstance(current, list):
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return list(value)
    return str(value)


@functools.cache
def choices(cls: type) -> dict[str, tuple[str, ...]]:
    """The words each Literal-typed field of the settings dataclass ``cls`` allows, by field name."""
    hints = get_type_hints(cls)
    return {f.name: get_args(hints[f.name]) for f in dataclasses.fields(cls) if get_origin(hints[f.name]) is Literal}


def check_choices(target: Any, prefix: str) -> None:
    """Every Literal-typed setting of ``target`` and of its sections holds one of its words."""
    allowed = choices(type(target))
    for f in dataclasses.fields(target):
        value = getattr(target, f.name)
        if dataclasses.is_dataclass(value):
            check_choices(value, f"{prefix}{f.name}.")
        elif f.name in allowed and value not in allowed[f.name]:
            raise ConfigError(f"{prefix}{f.name} must be one of {', '.join(allowed[f.name])}; got {value!r}")
