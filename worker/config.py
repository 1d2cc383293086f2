"""Settings: embedded defaults, ``.cairn/config.toml``, then editor options.

Each layer is structured field by field: a bad option (unknown name, wrong
type, value outside its vocabulary) is reported with ``E_CONFIG_INVALID`` and
replaced by the value of the layer below, never guessed and never fatal.
TOML keys are snake_case (``idle_minutes``); editor options use the LSP
spelling (``idleMinutes``).
"""

from __future__ import annotations

import os
import re
import tomllib
from typing import Any

import attrs
from cairn.protocol.lsp import Settings

_CHOICES: dict[str, tuple[str, ...]] = {"mode": ("manual", "propose", "auto"), "provider": ("extractive", "openai")}
_FIELDS = {f.name: f for f in attrs.fields(Settings)}


def _camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def _check(name: str, value: Any) -> Any:
    default = getattr(Settings(), name)
    if isinstance(default, tuple):
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise TypeError("expected a list of strings")
        return tuple(value)
    if isinstance(default, bool) or isinstance(default, str):
        if type(value) is not type(default):
            raise TypeError(f"expected {type(default).__name__}")
    elif isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("expected a number")
        if value < 0:
            raise ValueError("must not be negative")
        value = type(default)(value)
    if name in _CHOICES and value not in _CHOICES[name]:
        raise ValueError(f"expected one of {', '.join(_CHOICES[name])}")
    return value


def merge(base: Settings, options: dict[str, Any] | None, *, source: str, snake: bool = False) -> tuple[Settings, list[str]]:
    """Apply ``options`` over ``base``; return the result and one warning per bad option."""
    warnings: list[str] = []
    changes: dict[str, Any] = {}
    for key, value in (options or {}).items():
        name = _camel(key) if snake else key
        if name not in _FIELDS:
            warnings.append(f"E_CONFIG_INVALID: {source}: unknown option {key!r} ignored")
            continue
        try:
            changes[name] = _check(name, value)
        except (TypeError, ValueError) as exc:
            warnings.append(f"E_CONFIG_INVALID: {source}: option {key!r} {exc}; default kept")
    return attrs.evolve(base, **changes), warnings


def load(workspace: str, editor_options: dict[str, Any] | None = None) -> tuple[Settings, list[str]]:
    """Resolved settings for a workspace, with warnings for everything refused."""
    settings = Settings()
    warnings: list[str] = []
    path = os.path.join(workspace, ".cairn", "config.toml")
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        data = {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        warnings.append(f"E_CONFIG_INVALID: .cairn/config.toml unreadable ({type(exc).__name__}); defaults kept")
        data = {}
    settings, w = merge(settings, data, source=".cairn/config.toml", snake=True)
    warnings += w
    settings, w = merge(settings, editor_options, source="editor settings")
    return settings, warnings + w


def to_dict(settings: Settings) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in attrs.asdict(settings).items()}
