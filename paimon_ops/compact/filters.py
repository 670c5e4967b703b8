"""Partition filters for compaction: partition specs (`{"dt": "2024-01-01"}`), a small SQL-ish `where` over
partition columns (`dt >= '2024-01-01' AND region = 'eu'`), or a Python callable on partition dicts."""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping, Sequence

from paimon_ops.errors import InvalidArgumentError, arg
from paimon_ops.format.partition import parse_partition_spec, parse_partition_value

PartitionPredicate = Callable[[dict[str, Any]], bool]

_TOKEN = re.compile(r"""\s*(?:
    (?P<str>'(?:[^']|'')*')
  | (?P<num>-?\d+(?:\.\d+)?)
  | (?P<op><=|>=|<>|!=|=|<|>)
  | (?P<lp>\() | (?P<rp>\)) | (?P<comma>,)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*|`[^`]+`|"[^"]+")
)""", re.VERBOSE)


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise InvalidArgumentError(f"cannot parse {arg('where', text)} at position {pos}: {text[pos:pos + 20]!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    """expr := or ; or := and (OR and)* ; and := not (AND not)* ; not := NOT not | atom ;
    atom := '(' expr ')' | col op literal | col [NOT] IN (lit, ...) | col IS [NOT] NULL"""

    def __init__(self, text: str, names: Sequence[str], types: Sequence[Any], default_name: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.types = dict(zip(names, types))
        self.default_name = default_name

    def fail(self, msg: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"{arg('where', self.text)}: {msg}")

    def peek_word(self, *words: str) -> bool:
        return self.i < len(self.toks) and self.toks[self.i][0] == "word" and self.toks[self.i][1].upper() in words

    def take(self, kind: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.toks):
            raise self.fail("unexpected end")
        tok = self.toks[self.i]
        if kind and tok[0] != kind:
            raise self.fail(f"expected {kind}, got {tok[1]!r}")
        self.i += 1
        return tok

    def parse(self) -> PartitionPredicate:
        p = self.or_()
        if self.i != len(self.toks):
            raise self.fail(f"unexpected {self.toks[self.i][1]!r}")
        return p

    def or_(self) -> PartitionPredicate:
        parts = [self.and_()]
        while self.peek_word("OR"):
            self.i += 1
            parts.append(self.and_())
        if len(parts) == 1:
            return parts[0]
        return lambda row: any(p(row) for p in parts)

    def and_(self) -> PartitionPredicate:
        parts = [self.not_()]
        while self.peek_word("AND"):
            self.i += 1
            parts.append(self.not_())
        if len(parts) == 1:
            return parts[0]
        return lambda row: all(p(row) for p in parts)

    def not_(self) -> PartitionPredicate:
        if self.peek_word("NOT"):
            self.i += 1
            inner = self.not_()
            return lambda row: not inner(row)
        return self.atom()

    def literal(self, col: str) -> Any:
        kind, text = self.take()
        if kind == "str":
            raw = text[1:-1].replace("''", "'")
        elif kind == "num":
            raw = text
        elif kind == "word" and text.upper() in ("TRUE", "FALSE"):
            raw = text.lower()
        else:
            raise self.fail(f"expected a literal for {col}, got {text!r}")
        return parse_partition_value(raw, self.types[col], col, self.default_name)

    def atom(self) -> PartitionPredicate:
        if self.i < len(self.toks) and self.toks[self.i][0] == "lp":
            self.i += 1
            p = self.or_()
            self.take("rp")
            return p
        _, col = self.take("word")
        col = col.strip('`"')
        if col not in self.types:
            raise self.fail(f"{col!r} is not a partition column (partition columns: {list(self.types)}); "
                            "compaction filters may only use partition columns")
        if self.peek_word("IS"):
            self.i += 1
            negate = self.peek_word("NOT")
            if negate:
                self.i += 1
            if not self.peek_word("NULL"):
                raise self.fail("expected NULL after IS")
            self.i += 1
            return (lambda row: row[col] is not None) if negate else (lambda row: row[col] is None)
        negate = self.peek_word("NOT")
        if negate:
            self.i += 1
        if self.peek_word("IN"):
            self.i += 1
            self.take("lp")
            values = [self.literal(col)]
            while self.i < len(self.toks) and self.toks[self.i][0] == "comma":
                self.i += 1
                values.append(self.literal(col))
            self.take("rp")
            return (lambda row: row[col] is not None and row[col] not in values) if negate else \
                (lambda row: row[col] in values)
        if negate:
            raise self.fail("NOT must be followed by IN here")
        _, op = self.take("op")
        v = self.literal(col)
        cmp = {"=": lambda a: a == v, "!=": lambda a: a != v, "<>": lambda a: a != v, "<": lambda a: a < v,
               "<=": lambda a: a <= v, ">": lambda a: a > v, ">=": lambda a: a >= v}[op]
        return lambda row: row[col] is not None and cmp(row[col])  # SQL: NULL compares unknown -> false


def partition_predicate(names: Sequence[str], types: Sequence[Any], default_name: str,
                        partitions: Sequence[Mapping[str, Any] | str] | Mapping[str, Any] | None = None,
                        where: str | PartitionPredicate | None = None) -> PartitionPredicate | None:
    """One predicate on partition dicts (typed values) from `partitions` (OR of specs) and `where` (AND)."""
    preds: list[PartitionPredicate] = []
    if partitions is not None:
        if isinstance(partitions, (Mapping, str)):
            partitions = [partitions]
        if not isinstance(partitions, (list, tuple)) or not all(isinstance(p, (Mapping, str)) for p in partitions):
            raise InvalidArgumentError(f"{arg('partitions')} must be a list of {{key: value}} partition specs (or "
                                       f"'k=v,k2=v2' texts), got {partitions!r}")
        specs = []
        for p in partitions:
            try:
                specs.append(parse_partition_spec({k: str(v) for k, v in p.items()} if isinstance(p, Mapping) else p,
                                                  names, types, default_name))
            except InvalidArgumentError as e:  # named as the caller gave it: --partition dt=x on the command line
                given = p if isinstance(p, str) else ",".join(f"{k}={v}" for k, v in p.items())
                raise type(e)(f"{arg('partitions', given)}: {e}") from None
        preds.append(lambda row: any(all(row[k] == v for k, v in s.items()) for s in specs))
    if where is not None:
        if callable(where):
            preds.append(where)
        elif isinstance(where, str):
            if not names:
                raise InvalidArgumentError(f"{arg('where')} given but the table is not partitioned")
            preds.append(_Parser(where, names, types, default_name).parse())
        else:
            raise InvalidArgumentError(f"where must be a string or a callable, got {type(where).__name__}")
    if not preds:
        return None
    return preds[0] if len(preds) == 1 else (lambda row: all(p(row) for p in preds))


__all__ = ["partition_predicate", "PartitionPredicate"]
