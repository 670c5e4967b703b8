"""Manifest codec throughput: decode and encode rate (entries/s) for manifests of realistic DataFileMeta.

    .venv/bin/python benchmarks/bench_manifest.py [entries]
"""
from __future__ import annotations

import sys
import time

from paimon_ops.format import manifest as mf
from paimon_ops.format.binary_row import serialize_row
from paimon_ops.format.types import parse_type


def make_entries(n: int) -> list[mf.ManifestEntry]:
    part_t = [parse_type("STRING")]
    key_t = [parse_type("BIGINT NOT NULL")]
    val_t = [parse_type(t) for t in ("BIGINT", "STRING", "DOUBLE", "DECIMAL(12, 2)", "TIMESTAMP(3)")]
    vstats = mf.SimpleStats(serialize_row([1, "a" * 16, 0.5, None, None], val_t),
                            serialize_row([99, "z" * 16, 9.5, None, None], val_t), (0, 0, 1, 2, 3))
    out = []
    for i in range(n):
        meta = mf.DataFileMeta(
            file_name=f"data-8c4f5a1e-1234-4bcd-9f00-{i:012d}-0.parquet", file_size=128 << 20, row_count=1_000_000,
            min_key=serialize_row([i * 1000], key_t), max_key=serialize_row([i * 1000 + 999], key_t),
            key_stats=mf.SimpleStats(serialize_row([i * 1000], key_t), serialize_row([i * 1000 + 999], key_t), (0,)),
            value_stats=vstats, min_sequence_number=i, max_sequence_number=i + 10, schema_id=0, level=5,
            extra_files=(), creation_time=1_700_000_000_000, delete_row_count=0, embedded_index=None, file_source=1,
            value_stats_cols=None, external_path=None, first_row_id=None, write_cols=None, write_cols_sequences=None)
        out.append(mf.ManifestEntry(0, serialize_row([f"2026-11-{i % 28 + 1:02d}"], part_t), i % 16, 16, meta))
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    entries = make_entries(n)
    t0 = time.perf_counter()
    data = mf.write_manifest(entries, mf.LATEST)
    t1 = time.perf_counter()
    decoded, _ = mf.read_manifest(data, "bench")
    t2 = time.perf_counter()
    assert len(decoded) == n and decoded[-1] == entries[-1]
    print(f"manifest entries: {n}, file {len(data) / 1e6:.1f} MB (zstd)")
    print(f"encode: {n / (t1 - t0):,.0f} entries/s ({t1 - t0:.2f} s)")
    print(f"decode: {n / (t2 - t1):,.0f} entries/s ({t2 - t1:.2f} s)")


if __name__ == "__main__":
    main()
