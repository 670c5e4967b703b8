"""Record-at-a-time aggregators with Java's exact semantics (aggregate/Field*Agg.java).

These are the reference state machines. The vectorised engines use them only as a fallback for the
rare (function, group) combinations that have no vectorised form (see engines.py: nested_update,
merge_map, collect with distinct or retractions, listagg distinct, product with retractions, and
partial-update sequence groups holding such functions). Values are plain Python objects as produced
by `pyarrow.Array.to_pylist()` (MAP values are lists of (key, value) tuples, ROW values are dicts).
"""
from __future__ import annotations

import decimal
import re
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from paimon_ops.merge.spec import PRIMARY_KEY_FUNC, FieldAgg, MergeError

_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
# java.lang.Character.isWhitespace: Unicode space separators except no-break spaces, plus \t\n\x0b\f\r\x1c-\x1f.
JAVA_WHITESPACE = "\t\n\x0b\f\r\x1c\x1d\x1e\x1f \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006" \
                  "\u2008\u2009\u200a\u2028\u2029\u205f\u3000"
_BLANK = re.compile("^[" + re.escape(JAVA_WHITESPACE) + "]*$")


def is_blank(s: str | None) -> bool:
    """Paimon StringUtils.isBlank: null, empty or only Java whitespace."""
    return s is None or _BLANK.match(s) is not None


def wrap_int(v: int, bits: int) -> int:
    """Two's complement wrap-around, as Java's (byte)/(short)/(int)/(long) arithmetic does."""
    m = 1 << bits
    v &= m - 1
    return v - m if v >= (m >> 1) else v


def retract_unsupported(agg: FieldAgg, where: str) -> MergeError:
    return MergeError(
        f"{where}: aggregate function '{agg.func}' of field {agg.field!r} does not support retraction "
        f"(a -U/-D record was merged); if this function may ignore retraction messages, configure "
        f"'fields.{agg.field}.ignore-retract'='true'")


class ScalarAgg:
    """One field's FieldAggregator; agg/agg_reversed/retract follow the Java method contracts."""

    def __init__(self, agg: FieldAgg, where: str) -> None:
        self.spec = agg
        self.where = where
        self.root = agg.dtype.root
        self.initialized = False

    def reset(self) -> None:
        self.initialized = False

    # -- numeric helpers
    def _num(self, op: str, a: Any, b: Any) -> Any:
        r = self.root
        if r in _INT_BITS:
            if op == "+":
                return wrap_int(a + b, _INT_BITS[r])
            if op == "-":
                return wrap_int(a - b, _INT_BITS[r])
            if op == "*":
                return wrap_int(a * b, _INT_BITS[r])
            if b == 0:
                raise MergeError(f"{self.where}: product retraction of field {self.spec.field!r} divides by zero "
                                 "(Java throws ArithmeticException)")
            q = abs(a) // abs(b)  # Java integer division truncates toward zero
            return wrap_int(q if (a >= 0) == (b >= 0) else -q, _INT_BITS[r])
        if r in ("FLOAT", "DOUBLE"):
            ft = np.float32 if r == "FLOAT" else np.float64
            x, y = ft(a), ft(b)
            with np.errstate(all="ignore"):
                out = {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op]
            return float(ft(out))
        # DECIMAL: BigDecimal arithmetic, then Decimal.fromBigDecimal(precision, scale) -> null on overflow.
        p, s = self.spec.dtype.precision or 10, self.spec.dtype.scale or 0
        if op == "/":
            q = Fraction(a) / Fraction(b) if b != 0 else None
            den = q.denominator if q is not None else 0
            while den and den % 2 == 0:
                den //= 2
            while den and den % 5 == 0:
                den //= 5
            if den != 1:
                raise MergeError(f"{self.where}: product retraction of DECIMAL field {self.spec.field!r} has no exact "
                                 "quotient (Java BigDecimal.divide throws ArithmeticException)")
            assert q is not None
            exact = decimal.Decimal(q.numerator) / decimal.Decimal(q.denominator)  # terminating: exact
        else:
            with decimal.localcontext() as ctx:
                ctx.prec = 200
                exact = {"+": a + b, "-": a - b, "*": a * b}[op]
            if op != "*" and p <= 18:
                # DecimalUtils.add/subtract on compact decimals: exact long arithmetic, no precision check;
                # only a long overflow falls back to BigDecimal + fromBigDecimal (null beyond the precision).
                if -(1 << 63) <= int(exact.scaleb(s)) < (1 << 63):
                    return exact
                return None
        return fit_decimal(exact, p, s)

    def _neg(self, v: Any) -> Any:
        if v is None:
            return None
        r = self.root
        if r in _INT_BITS:
            return wrap_int(-v, _INT_BITS[r])
        return -v

    # -- the three Java entry points
    def agg(self, acc: Any, inp: Any) -> Any:
        f = self.spec.func
        if f == PRIMARY_KEY_FUNC or f == "last_value":
            return inp
        if f == "last_non_null_value":
            return acc if inp is None else inp
        if f == "first_value":
            if not self.initialized:
                self.initialized = True
                return inp
            return acc
        if f == "first_non_null_value":
            if not self.initialized and inp is not None:
                self.initialized = True
                return inp
            return acc
        if f in ("sum", "product"):
            if acc is None or inp is None:
                return inp if acc is None else acc
            return self._num("+" if f == "sum" else "*", acc, inp)
        if f in ("max", "min"):
            if acc is None or inp is None:
                return inp if acc is None else acc
            c = java_compare(acc, inp)
            if f == "max":
                return inp if c < 0 else acc
            return acc if c < 0 else inp
        if f in ("bool_and", "bool_or"):
            if acc is None or inp is None:
                return inp if acc is None else acc
            return (acc and inp) if f == "bool_and" else (acc or inp)
        if f == "listagg":
            return self._listagg(acc, inp)
        if f == "collect":
            return self._collect(acc, inp)
        if f == "merge_map":
            if acc is None or inp is None:
                return inp if acc is None else acc
            d = dict(_map_items(acc))
            d.update(_map_items(inp))
            return list(d.items())
        if f == "nested_update":
            return self._nested(acc, inp)
        raise AssertionError(f)

    def agg_reversed(self, acc: Any, inp: Any) -> Any:
        # FieldAggregator.aggReversed = agg(input, acc); FieldCollectAgg overrides it with agg(acc, input).
        if self.spec.func == "collect":
            return self.agg(acc, inp)
        return self.agg(inp, acc)

    def retract(self, acc: Any, inp: Any) -> Any:
        if self.spec.ignore_retract:
            return acc  # FieldIgnoreRetractAgg
        f = self.spec.func
        if f == PRIMARY_KEY_FUNC:
            return inp
        if f == "last_value":
            return None
        if f == "last_non_null_value":
            return None if inp is not None else acc
        if f == "sum":
            if acc is None or inp is None:
                return self._neg(inp) if acc is None else acc
            return self._num("-", acc, inp)
        if f == "product":
            if acc is None or inp is None:
                return inp if acc is None else acc
            return self._num("/", acc, inp)
        if f == "collect":
            if acc is None:
                return None
            if inp is None:
                return acc  # Java would fail with a NullPointerException here
            pending = list(inp)
            out = []
            for e in acc:
                for j, r in enumerate(pending):
                    if r == e:
                        del pending[j]
                        break
                else:
                    out.append(e)
            return out
        if f == "merge_map":
            if acc is None:
                return None
            if inp is None:
                return acc  # Java would fail with a NullPointerException here
            gone = {k for k, _ in _map_items(inp)}
            return [(k, v) for k, v in _map_items(acc) if k not in gone]
        if f == "nested_update":
            if acc is None or inp is None:
                return acc
            keys = self.spec.nested_key
            if not keys:
                rows = [r for r in acc if r is not None]
                for r in inp:
                    if r is not None:
                        rows = [x for x in rows if x != r]
                return rows
            d = {_nkey(r, keys): r for r in acc if r is not None}
            for r in inp:
                if r is not None:
                    d.pop(_nkey(r, keys), None)
            return list(d.values())
        raise retract_unsupported(self.spec, self.where)

    # -- listagg / collect / nested_update bodies
    def _listagg(self, acc: str | None, inp: str | None) -> str | None:
        if is_blank(inp):
            return acc
        if is_blank(acc):
            return inp
        assert acc is not None and inp is not None
        d = self.spec.delimiter
        if not self.spec.distinct:
            return acc + d + inp
        existing = set(split_whole(acc, d))
        out = acc
        for tok in split_whole(inp, d):
            if is_blank(tok) or tok in existing:
                continue
            existing.add(tok)
            out += d + tok
        return out

    def _collect(self, acc: list | None, inp: list | None) -> list | None:
        if acc is None and inp is None:
            return None
        if not self.spec.distinct and (acc is None or inp is None):
            return inp if acc is None else acc
        if not self.spec.distinct:
            assert acc is not None and inp is not None
            return list(acc) + list(inp)
        out: list = []
        for src in (acc, inp):
            for e in src or ():
                if not any(_same(e, o) for o in out):
                    out.append(e)
        return out

    def _nested(self, acc: list | None, inp: list | None) -> list | None:
        """FieldNestedUpdateAgg.agg (master): keyed upsert (nested-sequence-field decides between equal keys,
        count-limit caps new keys) or, without a key, append up to count-limit rows. Java keeps keyed rows in a
        HashMap, so its element order is hash order; here it is first-appearance order."""
        if inp is None:
            return acc
        a = self.spec
        limit = a.count_limit
        if not a.nested_key:
            if acc is None:
                return [r for r in inp if r is not None][:limit]
            if len(acc) >= limit:
                return acc
            return [r for r in acc if r is not None] + [r for r in inp if r is not None][:limit - len(acc)]
        rows: dict = {}
        for src, limit_new in ((acc or [], False), (inp, True)):
            for r in src:
                if r is None:
                    continue
                key = _nkey(r, a.nested_key)
                if any(k is None for k in key):
                    if a.nested_key_null_strategy == "ignore":
                        continue
                    if a.nested_key_null_strategy == "error":
                        raise MergeError(f"{self.where}: nested key of field {a.field!r} contains null values "
                                         f"(fields.{a.field}.nested-key-null-strategy=error)")
                old = rows.get(key)
                if old is not None:
                    if not a.nested_sequence or compare_nulls_first([r.get(f) for f in a.nested_sequence],
                                                                      [old.get(f) for f in a.nested_sequence]) >= 0:
                        rows[key] = r
                elif not limit_new or len(rows) < limit:
                    rows[key] = r
        return list(rows.values())


def compare_nulls_first(xs: Sequence[Any], ys: Sequence[Any]) -> int:
    """Sequence-field order (UserDefinedSeqComparator / generated RecordComparator, ascending): field by field,
    null smaller than any value."""
    for x, y in zip(xs, ys):
        if x is None and y is None:
            continue
        if x is None:
            return -1
        if y is None:
            return 1
        c = java_compare(x, y)
        if c:
            return c
    return 0


def _same(a: Any, b: Any) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and a == b)


def _nkey(row: dict, keys: tuple[str, ...]) -> tuple:
    return tuple(_hashable(row.get(k)) for k in keys)


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


def _map_items(m: Any) -> list[tuple]:
    if isinstance(m, dict):
        return list(m.items())
    return [(_hashable(k), v) for k, v in m]


def split_whole(s: str, sep: str) -> list[str]:
    """BinaryStringUtils.splitByWholeSeparatorPreserveAllTokens (empty tokens kept)."""
    if s == "":
        return []
    if sep == "":
        return s.split()  # Java splits on whitespace for an empty separator
    return s.split(sep)


def java_compare(a: Any, b: Any) -> int:
    """InternalRowUtils.compare for atomic values (floats as Double.compare: NaN is the largest)."""
    if isinstance(a, float) or isinstance(b, float):
        an, bn = a != a, b != b
        if an or bn:
            return (an > bn) - (an < bn)
    return (a > b) - (a < b)


def fit_decimal(v: decimal.Decimal, precision: int, scale: int) -> decimal.Decimal | None:
    """Decimal.fromBigDecimal: round HALF_UP to the scale; null when the precision overflows."""
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        q = v.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP)
    digits = len(q.as_tuple().digits) if q != 0 else 1
    if digits > precision:
        return None
    return q
