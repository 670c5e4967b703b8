"""Merge engines of primary-key tables: deduplicate, partial-update, aggregation, first-row.

API
---
``MergeSpec.from_schema(schema, options, where)`` parses and validates a table's merge options once
(InvalidOptionError / UnsupportedError naming the table, field and option).

``merge_records(records, spec, drop_delete, *, lookup_rewrite=False)`` merges the records of one bucket (or key
range): the table's columns plus ``_SEQUENCE_NUMBER`` (int64), ``_VALUE_KIND`` (int8: 0 +I, 1 -U, 2 +U, 3 -D) and
``_LEVEL`` (int32), in any order. It returns one row per surviving key, sorted by key (Java's key comparator:
strings by UTF-8 bytes), with the input columns minus ``_LEVEL``; ``_SEQUENCE_NUMBER`` / ``_VALUE_KIND`` are those
Java's merge functions produce. ``drop_delete`` drops results of kind -U/-D. ``lookup_rewrite`` selects Java's
LookupChangelogMergeFunctionWrapper path (see merge.py).

Semantics follow Java master (maintenance.md §5.11, §6), record by record:
order inside a key = sequence.field (nulls first in both sort orders), _SEQUENCE_NUMBER, retract before add;
a key with one record passes through unchanged (ReducerMergeFunctionWrapper); lookup tables merge level-0 records
with the shallowest level >= 1 only (LookupMergeFunction; not for first-row).

Known differences of older Java releases (0.9) that this module does NOT reproduce (it follows master):
* no ``aggregation.remove-record-on-delete`` (added in 1.1, apache/paimon#5360) and no
  ``partial-update.remove-record-on-sequence-group`` (1.0);
* partial-update had no initRow/meetInsert: a key without any insert merged to +I instead of -D, and a leading
  retraction did not seed the row (master copies every field of it, apache/paimon#5077 + apache/paimon#7645);
* listagg concatenated blank strings and had no ``distinct`` (apache/paimon#6566, apache/paimon#6582,
  apache/paimon#7652, apache/paimon#8480);
* LookupMergeFunction kept the newest high-level record in merge order instead of the shallowest level (apache/paimon#5632).
"""
