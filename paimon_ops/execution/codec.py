"""A plan's JSON, both ways: plan data by field (`encode` / `decode`, which refuses values of the wrong JSON type
naming the field), and the planner's recorded arguments (`encode_param` / `decode_param`: times and durations tagged so
that they decode to the same values)."""
from __future__ import annotations

import collections.abc
import dataclasses
import datetime as _dt
import types
import typing
from typing import Any, Mapping

from paimon_ops.errors import FormatError
from paimon_ops.execution.files import FileAction, FileColumns, FileList
from paimon_ops.execution.model import _PRECONDITIONS, Precondition


def encode(v: Any) -> Any:
    """Plain JSON values of plan data (dataclasses by field, preconditions tagged with their kind)."""
    if type(v) is FileAction:  # the bulk of a large plan or report: four plain fields, no reflection
        return {"path": v.path, "kind": v.kind, "reason": v.reason, "size": v.size}
    if isinstance(v, FileList):
        return [{"path": a.path, "kind": a.kind, "reason": a.reason, "size": a.size} for a in v]
    if isinstance(v, (list, tuple)) and v and type(v[0]) is FileAction:
        return [{"path": a.path, "kind": a.kind, "reason": a.reason, "size": a.size} if type(a) is FileAction
                else encode(a) for a in v]
    if isinstance(v, Precondition):
        return {"kind": v.kind, **{f.name: encode(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: encode(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, Mapping):
        return {str(k): encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    if isinstance(v, bytes):
        return v.hex()
    return v


def decode(tp: Any, v: Any, where: str = "") -> Any:
    """The inverse of `encode` for a type annotation `tp` (dataclasses, tuples, unions with None, mappings). Values
    of the wrong JSON type are refused (TypeError naming the field), never passed on."""
    if isinstance(tp, str):
        raise TypeError(f"unresolved annotation {tp}")
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if v is None:
            return None
        if len(members) == 1:
            return decode(members[0], v, where)
        for m in members:  # the first member the value fits
            try:
                return decode(m, v, where)
            except (TypeError, ValueError):
                continue
        raise TypeError(f"{where or 'value'}: {type(v).__name__} fits none of {tp}")
    if tp is FileList:
        _expect(v, list, where)
        cols = FileColumns()
        for i, x in enumerate(v):  # (one element at a time: a saved plan may list millions)
            cols.append(decode(FileAction, x, f"{where}[{i}]"))
        return cols.freeze()
    if tp is Precondition or (isinstance(tp, type) and issubclass(tp, Precondition) and not tp.kind):
        _expect(v, dict, where)
        cls = _PRECONDITIONS.get(v.get("kind"))
        if cls is None:
            raise FormatError(f"unknown precondition kind {v.get('kind')!r}")
        return decode(cls, {k: x for k, x in v.items() if k != "kind"}, where)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        _expect(v, dict, where)
        hints = typing.get_type_hints(tp)
        kw: dict[str, Any] = {}
        for f in dataclasses.fields(tp):
            if f.init and f.name in v:
                kw[f.name] = decode(hints[f.name], v[f.name], f"{where}.{f.name}" if where else f.name)
        return tp(**kw)
    if origin is tuple:
        _expect(v, list, where)
        targs = typing.get_args(tp)
        if len(targs) == 2 and targs[1] is Ellipsis:
            return tuple(decode(targs[0], x, f"{where}[{i}]") for i, x in enumerate(v))
        if len(v) != len(targs):
            raise FormatError(f"{where or 'value'}: expected {len(targs)} items, got {len(v)}")
        return tuple(decode(a, x, f"{where}[{i}]") for i, (a, x) in enumerate(zip(targs, v)))
    if origin in (list, collections.abc.Sequence, collections.abc.Iterable):
        _expect(v, list, where)
        item = (typing.get_args(tp) or (Any,))[0]
        return [decode(item, x, f"{where}[{i}]") for i, x in enumerate(v)]
    if origin in (dict, collections.abc.Mapping) or tp in (dict, Mapping):
        _expect(v, dict, where)
        margs = typing.get_args(tp)
        if len(margs) == 2:
            return {k: decode(margs[1], x, f"{where}.{k}") for k, x in v.items()}
        return dict(v)
    if tp is bytes:
        _expect(v, str, where)
        return bytes.fromhex(v)
    if tp is bool:
        _expect(v, bool, where)
    elif tp is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{where or 'value'}: expected an integer, got {type(v).__name__}")
    elif tp is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{where or 'value'}: expected a number, got {type(v).__name__}")
    elif tp is str:
        _expect(v, str, where)
    return v


def _expect(v: Any, kind: type, where: str) -> None:
    if not isinstance(v, kind):
        names = {dict: "an object", list: "a list", str: "a string", bool: "true or false"}
        raise TypeError(f"{where or 'value'}: expected {names.get(kind, kind.__name__)}, got {type(v).__name__}")


class Unrecordable(Exception):
    pass


def encode_param(v: Any) -> Any:
    """JSON for a planner argument; times and durations tagged so that they decode to the same values."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, _dt.timedelta):
        return {"$timedelta_us": (v.days * 86_400 + v.seconds) * 1_000_000 + v.microseconds}
    if isinstance(v, _dt.datetime):
        return {"$datetime": v.isoformat()}
    if isinstance(v, _dt.date):
        return {"$date": v.isoformat()}
    if isinstance(v, (list, tuple)):
        return [encode_param(x) for x in v]
    if isinstance(v, Mapping):
        if not all(isinstance(k, str) for k in v):
            raise Unrecordable("a mapping with non-text keys")
        return {k: encode_param(x) for k, x in v.items()}
    raise Unrecordable(f"a {type(v).__name__}")


def decode_param(v: Any) -> Any:
    if isinstance(v, list):
        return [decode_param(x) for x in v]
    if isinstance(v, dict):
        if len(v) == 1:
            (k, x), = v.items()
            try:
                if k == "$timedelta_us" and isinstance(x, int) and not isinstance(x, bool):
                    return _dt.timedelta(microseconds=x)
                if k == "$datetime" and isinstance(x, str):
                    return _dt.datetime.fromisoformat(x)
                if k == "$date" and isinstance(x, str):
                    return _dt.date.fromisoformat(x)
            except (ValueError, OverflowError) as e:
                raise FormatError(f"{k}: {e}") from None
        return {k: decode_param(x) for k, x in v.items()}
    return v



__all__ = ["encode", "decode", "encode_param", "decode_param", "Unrecordable"]
