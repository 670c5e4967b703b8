"""Schema files `schema/schema-<id>` (format.md §2): read and write the JSON exactly as Java does."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from paimon_ops.errors import CorruptMetadataError
from paimon_ops.format.types import DataField, DataType, field_to_json, max_field_id, parse_field, row_type
from paimon_ops.options import BUCKET_KEY, read, with_schema_defaults


@dataclass(frozen=True)
class TableSchema:
    id: int
    fields: tuple[DataField, ...]
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    highest_field_id: int = -1
    version: int = 3
    time_millis: int = 0

    # ------------------------------------------------------------------ derived views
    @property
    def row_type(self) -> DataType:
        return row_type(self.fields)

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def trimmed_primary_keys(self) -> list[str]:
        """Primary keys minus partition keys, in primary-key order (format.md §5.7)."""
        return [k for k in self.primary_keys if k not in self.partition_keys]

    @property
    def bucket_keys(self) -> list[str]:
        return list(read(self.options, BUCKET_KEY)) or self.trimmed_primary_keys

    def fields_of(self, names: list[str] | tuple[str, ...]) -> list[DataField]:
        return [self.field(n) for n in names]

    @property
    def key_type(self) -> DataType:
        return row_type(self.fields_of(self.trimmed_primary_keys))

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> str:
        obj: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [field_to_json(f) for f in self.fields],
            "highestFieldId": self.highest_field_id if self.highest_field_id >= 0 else max_field_id(self.fields),
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:  # Java reads a JSON null comment as the text "null"
            obj["comment"] = self.comment
        obj["timeMillis"] = self.time_millis
        return json.dumps(obj, indent=2, separators=(",", " : "), ensure_ascii=False)

    @staticmethod
    def from_json(text: str | bytes, path: str) -> TableSchema:
        try:
            obj = json.loads(text)
        except (ValueError, UnicodeDecodeError) as e:
            raise CorruptMetadataError(path, f"schema is not valid JSON ({e})") from None
        if not isinstance(obj, dict):
            raise CorruptMetadataError(path, "schema JSON is not an object")
        try:
            version = int(obj.get("version", 1))
            fields = tuple(parse_field(f, path) for f in obj["fields"])
            options = {str(k): str(v) for k, v in (obj.get("options") or {}).items()}
            with_schema_defaults(options, version)  # what Java fills in when it reads an old schema
            comment = obj.get("comment")
            schema = TableSchema(
                id=int(obj["id"]),
                fields=fields,
                partition_keys=tuple(obj.get("partitionKeys") or ()),
                primary_keys=tuple(obj.get("primaryKeys") or ()),
                options=options,
                comment=comment if isinstance(comment, str) else None,
                highest_field_id=int(obj.get("highestFieldId", max_field_id(fields))),
                version=version,
                time_millis=int(obj.get("timeMillis") or 0),
            )
        except KeyError as e:
            raise CorruptMetadataError(path, f"schema lacks required key {e.args[0]!r}") from None
        except (TypeError, ValueError) as e:
            raise CorruptMetadataError(path, f"malformed schema ({e})") from None
        # every key names a field: checked here, where the file is read, not as a KeyError wherever it is looked up
        names = set(schema.field_names)
        for what, keys in (("partition key", schema.partition_keys), ("primary key", schema.primary_keys)):
            for key in keys:
                if not isinstance(key, str) or key not in names:
                    raise CorruptMetadataError(path, f"{what} {key!r} is not a field of the schema")
        return schema
