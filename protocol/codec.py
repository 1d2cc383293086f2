"""Closed, versioned records and their strict JSON codec.

Every persisted record is a JSON object ``{"record": KIND, "v": VERSION,
...fields}``. Decoding refuses, with a fixed error code, anything that is
not exactly a known kind at a known version with known, well-typed fields:
an empty or truncated file, malformed JSON, JSON nesting deeper than
:data:`boundedjson.MAX_DEPTH` (refused before decoding, never a
``RecursionError``), an unknown kind, an unknown version, an unknown field,
a wrong type. Nothing is coerced or guessed
("1" is not an int, a missing field is not ``None``).

Encoding is canonical (sorted keys, no whitespace, UTF-8) so that the bytes
of a record, and therefore its hash, are a function of its value.

A kind's schema changes by a new version, never in place. A version that
only adds fields (each with a default) names the class of the version before
it (``record(kind, version=2, upgrades=Old)``): a record of the old version is
read exactly as before (the old class, strictly) and then given as the new
class, its fields kept and the added ones at their defaults, so every reader
holds the newest shape while entries written before the change still read
(and are written again, if ever, as the newest version). The old class stays
registered only to read; nothing constructs it to write.

A record can also travel as its *body*, its fields without ``record`` and
``v`` (:func:`to_body`, :func:`from_body`), where the context already names
its schema: a worker job's arguments and result (:mod:`.results`), whose
kind is the job's. Decoding a body refuses exactly what :func:`from_obj`
refuses with the same codes. A field declared with :func:`optional_key`
(its default ``None``) is left out of the JSON while unset, so a result
keeps the keys its readers always saw.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, cast, dataclass_transform

import attrs
import cattrs
from cairn.protocol import boundedjson
from cairn.protocol.errors import CairnError, ErrorCode
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_unstructure_fn, override

T = TypeVar("T")

#: field metadata: the key is absent from the JSON while the value is the field's default (``None``)
OPTIONAL_KEY: dict[str, bool] = {"cairn.optional_key": True}


def optional_key() -> Any:
    """A record field that defaults to ``None`` and whose key is left out of the JSON while it is ``None``."""
    return attrs.field(default=None, metadata=OPTIONAL_KEY)

_REGISTRY: dict[str, dict[int, type]] = {}
#: (kind, version) -> the class of the next version, which reads a record of that version (see the docstring)
_UPGRADES: dict[tuple[str, int], type] = {}
#: (kind, version) -> the fields that version added: defaulted to construct, but required in its JSON
_ADDED: dict[tuple[str, int], frozenset[str]] = {}


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(attrs.field,))
def record(kind: str, version: int = 1, *, upgrades: type | None = None) -> Callable[[type[T]], type[T]]:
    """Class decorator: make an attrs frozen class a registered closed record.

    ``upgrades``: the class of version ``version - 1`` of the same kind, whose
    records then read as this class (every old field kept, each field this
    version adds at its default; a field may not be dropped or lack a default).
    """

    def wrap(cls: type[T]) -> type[T]:
        cls = attrs.frozen(kw_only=True)(cls)
        cls.RECORD_KIND = kind  # type: ignore[attr-defined]
        cls.RECORD_VERSION = version  # type: ignore[attr-defined]
        versions = _REGISTRY.setdefault(kind, {})
        if version in versions:
            raise RuntimeError(f"record {kind} v{version} registered twice")
        if upgrades is not None:
            old: Any = upgrades
            if (getattr(old, "RECORD_KIND", None), getattr(old, "RECORD_VERSION", None)) != (kind, version - 1):
                raise RuntimeError(f"record {kind} v{version} can only upgrade {kind} v{version - 1}")
            kept = {f.name for f in attrs.fields(old)}
            added = [f for f in attrs.fields(cast(Any, cls)) if f.name not in kept]
            if not kept <= {f.name for f in attrs.fields(cast(Any, cls))} or any(
                    f.default is attrs.NOTHING for f in added):
                raise RuntimeError(f"record {kind} v{version} must keep every field and default the new ones")
            _UPGRADES[(kind, version - 1)] = cls
            _ADDED[(kind, version)] = frozenset(f.name for f in added)
        versions[version] = cls
        return cls

    return wrap


def _upgraded(rec: Any) -> Any:
    """``rec`` as the newest version of its kind (itself when it is the newest)."""
    while (nxt := _UPGRADES.get((rec.RECORD_KIND, rec.RECORD_VERSION))) is not None:
        rec = nxt(**{f.name: getattr(rec, f.name) for f in attrs.fields(type(rec))})
    return rec


class Record:
    """Typing aid for registered records (set by :func:`record`)."""

    RECORD_KIND: ClassVar[str]
    RECORD_VERSION: ClassVar[int]


def evolve(rec: T, **changes: Any) -> T:
    """A copy of record ``rec`` with ``changes`` applied, exactly as :func:`attrs.evolve`.

    Records are attrs classes at run time but dataclass-like to type checkers
    (:func:`record` is a ``dataclass_transform``), and mypy checks
    ``attrs.evolve`` only on classes it saw decorated by attrs itself. This
    keeps the copy typed as the record's own class.
    """
    inst: Any = rec
    return cast(T, attrs.evolve(inst, **changes))


def _strict(tp: type) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if tp is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"expected number, got {type(value).__name__}")
            return float(value)
        if type(value) is not tp:
            raise TypeError(f"expected {tp.__name__}, got {type(value).__name__}")
        return value

    return hook


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    for tp in (int, bool, float):
        conv.register_structure_hook(tp, _strict(tp))
    strict_str = _strict(str)

    def str_or_enum(value: Any, tp: Any) -> Any:
        # StrEnum fields dispatch here too (str is in their MRO): make them members
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            if not isinstance(value, str):
                raise TypeError(f"expected a {tp.__name__} value")
            return tp(value)
        return strict_str(value, tp)

    conv.register_structure_hook(str, str_or_enum)

    def tuple_hook(value: Any, tp: Any) -> Any:
        if not isinstance(value, list):
            raise TypeError("expected array")
        (inner, *rest) = tp.__args__
        if rest and rest != [Ellipsis]:
            raise TypeError("fixed tuples are not used in records")
        if inner is str:  # the common case (a batch's turn ids): the same check as each str field, in one pass
            if all(type(v) is str for v in value):
                return tuple(value)
            raise TypeError("expected str")
        return tuple(conv.structure(v, inner) for v in value)

    conv.register_structure_hook_func(
        lambda t: getattr(t, "__origin__", None) is tuple, tuple_hook
    )

    def dict_hook(value: Any, tp: Any) -> Any:
        if not isinstance(value, dict):
            raise TypeError("expected object")
        kt, vt = tp.__args__
        return {conv.structure(k, kt): conv.structure(v, vt) for k, v in value.items()}

    conv.register_structure_hook_func(lambda t: getattr(t, "__origin__", None) is dict, dict_hook)

    # StrEnum members (which cattrs passes through as str) unstructure to their values: a body handed on
    # in this process (the CLI, the MCP endpoint) is plain JSON data, as one read from a pipe
    conv.register_unstructure_hook(enum.StrEnum, lambda member: member.value)

    def optional_keys(cls: Any) -> list[str]:
        if not (isinstance(cls, type) and attrs.has(cls)):
            return []
        return [f.name for f in attrs.fields(cls) if f.metadata.get("cairn.optional_key")]

    def omitting(cls: Any) -> Any:
        overrides: dict[str, Any] = {n: override(omit_if_default=True) for n in optional_keys(cls)}
        return make_dict_unstructure_fn(cls, conv, **overrides)

    conv.register_unstructure_hook_factory(lambda t: bool(optional_keys(t)), omitting)
    return conv


converter = _make_converter()


def to_obj(rec: Any) -> dict[str, Any]:
    obj = converter.unstructure(rec)
    return {"record": rec.RECORD_KIND, "v": rec.RECORD_VERSION, **obj}


def to_body(rec: Any) -> dict[str, Any]:
    """The fields of record ``rec`` as a JSON object, without ``record`` and ``v``."""
    obj: dict[str, Any] = converter.unstructure(rec)
    return obj


def encode(rec: Any) -> bytes:
    return dumps(to_obj(rec))


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _flatten(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        out: list[BaseException] = []
        for sub in exc.exceptions:
            out.extend(_flatten(sub))
        return out
    return [exc]


def from_obj(obj: Any, expect: type[T] | None = None, *, where: str = "record") -> T:
    """Structure a parsed JSON object into its registered record class."""
    if not isinstance(obj, dict):
        raise CairnError(ErrorCode.RECORD_MALFORMED, f"{where}: not a JSON object")
    kind = obj.get("record")
    version = obj.get("v")
    if not isinstance(kind, str) or kind not in _REGISTRY:
        raise CairnError(ErrorCode.RECORD_UNKNOWN_KIND, f"{where}: unknown record kind {kind!r}"[:200])
    if expect is not None and kind != expect.RECORD_KIND:  # type: ignore[attr-defined]
        raise CairnError(
            ErrorCode.RECORD_UNKNOWN_KIND,
            f"{where}: expected {expect.RECORD_KIND}, found {kind}",  # type: ignore[attr-defined]
        )
    if type(version) is not int or version not in _REGISTRY[kind]:
        raise CairnError(
            ErrorCode.RECORD_UNKNOWN_VERSION, f"{where}: {kind} has no schema version {version!r}"[:200]
        )
    cls = _REGISTRY[kind][version]
    body = {k: v for k, v in obj.items() if k not in ("record", "v")}
    missing = _ADDED.get((kind, version), frozenset()) - set(body)
    if missing:  # a field a version added has a default to construct with, never to read with
        raise CairnError(ErrorCode.RECORD_INVALID_FIELD,
                         f"{where}: invalid {kind} v{version}: missing field(s) {','.join(sorted(missing))}"[:300])
    return cast(T, _upgraded(_structure(body, cls, where, f"{kind} v{version}")))


def from_body(obj: Any, cls: type[T], *, where: str = "record") -> T:
    """Structure the fields of a ``cls`` record (no ``record``/``v`` keys: the context names the schema).

    Refused as :func:`from_obj` refuses: not an object, an unknown field
    (``record`` and ``v`` included), a missing or ill-typed field.
    """
    if not isinstance(obj, dict):
        raise CairnError(ErrorCode.RECORD_MALFORMED, f"{where}: not a JSON object")
    label = f"{getattr(cls, 'RECORD_KIND', cls.__name__)} v{getattr(cls, 'RECORD_VERSION', 1)}"
    return _structure(obj, cls, where, label)


def _structure(body: dict[str, Any], cls: type[T], where: str, label: str) -> T:
    try:
        return converter.structure(body, cls)
    except Exception as exc:  # cattrs aggregates; classify the first cause
        causes = _flatten(exc)
        for cause in causes:
            if isinstance(cause, ForbiddenExtraKeysError):
                names = ",".join(sorted(cause.extra_fields))
                raise CairnError(
                    ErrorCode.RECORD_UNKNOWN_FIELD, f"{where}: unknown field(s) {names} in {label}"[:300]
                ) from None
        raise CairnError(ErrorCode.RECORD_INVALID_FIELD, f"{where}: invalid {label}: {causes[0]}"[:300]) from None


def decode(data: bytes, expect: type[T] | None = None, *, where: str = "record", limit: int = 8 << 20) -> T:
    """Decode record bytes strictly; see the module docstring for what is refused."""
    if not data:
        raise CairnError(ErrorCode.RECORD_EMPTY, f"{where}: empty file")
    if len(data) > limit:
        raise CairnError(ErrorCode.RECORD_TOO_LARGE, f"{where}: {len(data)} bytes exceeds {limit}")
    try:
        obj = boundedjson.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CairnError(ErrorCode.RECORD_MALFORMED, f"{where}: not UTF-8") from None
    except boundedjson.TooDeep as exc:
        raise CairnError(ErrorCode.RECORD_MALFORMED, f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        body = data.strip()
        # cut short = the parser ran out of input, not into a wrong character
        truncated = exc.pos >= len(body) or exc.msg.startswith("Unterminated string")
        code = ErrorCode.RECORD_TRUNCATED if truncated else ErrorCode.RECORD_MALFORMED
        raise CairnError(code, f"{where}: invalid JSON at byte {exc.pos}") from None
    return from_obj(obj, expect, where=where)
