"""Every snapshot's and tag's metadata exists and is this table's — checked before anything is written or deleted.

A snapshot names its manifest lists by plain name in the table's `manifest/` directory, and a list names manifests
there. A list that is missing, or a list copied in from another table (or crafted), reads as a history that is not
the table's: expiry and orphan removal would then take the files the real history keeps for unreferenced and delete
them, compaction would rewrite files that are not this table's, a commit would carry the foreign manifests on. So
every operation that writes or deletes (the executor calls `verify_lineage` after its preflight, before the first
write — the journal's included) refuses, in one line naming the snapshot or tag and the file, unless:

* every manifest list of every snapshot, tag and long-lived changelog of every branch exists and decodes, every
  manifest it names and every index manifest exists in `manifest/` (one listing), and every manifest's schema and
  every snapshot's schema is a schema of the table. As where files are kept alive (`references.UsedNames`): a
  long-lived changelog may have lost its base and delta lists and its index manifest to snapshot expiry
  (maintenance.md §2.8; not with changelog-producer=none), and tags do not keep changelog lists (§2.3);
* consecutive snapshots of a branch are one history: snapshot N was committed on snapshot N-1, and every writer
  (Java, pypaimon, paimon-rust, ours) makes N's base list the manifests of N-1's base and delta, merged at most —
  a merge drops an ADD with its DELETE, so it keeps every file's count of ADDs minus DELETEs. Equal manifest names
  pass at once; otherwise the lists' own counts (`_NUM_ADDED_FILES - _NUM_DELETED_FILES`) must agree, and then the
  manifests that differ (what a merge replaced) are decoded and every file's count compared exactly;
* a tag whose snapshot still exists names the same base and delta lists (a tag is a copy of its snapshot).

What no successor can vouch for — the newest snapshot's delta, the base of a branch's only snapshot, a tag whose
snapshot expired — is checked where files are taken for unreferenced (orphan removal: against the files the table's
directories hold, `unlisted_live_files`) and where files are read (compaction: its inputs exist,
`compact.api.check_inputs`).

The one exemption is the operation whose work is missing files, `remove-unexisting-files` (`Plan.repairs_missing`):
the data files it drops from the latest snapshot and the manifests it drops (`--drop-missing-manifests`) may be
missing — everything else is checked as for every operation. Names are never trusted to vouch for a history (a
manifest's writer token is the same for every commit of one writer session, and a copied list keeps its names): what a
merge replaced is decoded.

Cost: one read of each manifest list (O(lists)), one listing of `manifest/`, and a decode only of the manifests a
manifest merge replaced between two retained snapshots.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Collection, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, MissingFileError, TableNotFoundError
from paimon_ops.format import manifest as mf
from paimon_ops.format.manifest import ManifestFileMeta
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.table.scan import ManifestStore, TableScanner
from paimon_ops.table.table import FileStoreTable

STORE_CAPACITY = 32
DECODE_BATCH = 32


@dataclass
class _Owner:
    kind: str          # snapshot | tag | changelog
    label: str         # "snapshot 5", "branch b tag t1"
    snapshot: Snapshot
    path: str          # its file (to tell a concurrently expired owner from a broken one)


class _Check:
    def __init__(self, table: FileStoreTable, what: str, repairs_missing: Collection[str] = ()):
        self.main = table if table.branch == "main" else table.for_branch("main")
        self.what = what
        self.repairs_missing = frozenset(repairs_missing)
        self.store = ManifestStore(self.main, capacity=STORE_CAPACITY)
        self.io = self.main.io
        self.manifests: set[str] = set()  # (list_manifests, once the owners are read)
        self.lists: dict[str, list[ManifestFileMeta]] = {}
        self.schemas: set[int] = set()
        self.producer_none = self.main.options.changelog_producer == "none"

    def refuse(self, path: str, problem: str) -> CorruptMetadataError:
        return CorruptMetadataError(path, f"{problem}; refusing {self.what} of {self.main.identifier} (nothing was "
                                          "written or deleted): the table's history is not its own or is incomplete")

    def list_manifests(self) -> None:
        """The one listing of `manifest/`, taken after every owner was read: a writer writes its manifests before
        the snapshot that names them, so a snapshot committed while we read has them in this listing (a listing
        taken first missed them and refused a table a concurrent writer had just committed to). What is deleted
        after the listing is a concurrent expiry's, which `gone` recognises."""
        self.manifests = {st.name for st in self.io.list_status(self.main.manifest_dir) if not st.is_dir}

    def gone(self, o: _Owner) -> bool:
        """The owner was removed while we read (a concurrent expiry): what it named may be gone too."""
        return not self.io.exists(o.path)

    # ------------------------------------------------------------------ existence and schemas
    def read_list(self, o: _Owner, name: str, role: str, tolerate: bool) -> list[ManifestFileMeta] | None:
        metas = self.lists.get(name)
        if metas is None:
            try:
                metas = self.store.manifest_list(name, f"{o.label} ({role})")
            except MissingFileError:
                if tolerate or self.gone(o):
                    return None
                raise self.refuse(self.main.manifest_path(name), f"the {role} manifest list of {o.label} does not "
                                                                 "exist") from None
            except CorruptMetadataError as e:
                raise self.refuse(e.path, f"the {role} manifest list of {o.label} is unreadable ({e.problem})") \
                    from None
            self.lists[name] = metas
        for m in metas:
            if m.file_name not in self.manifests and m.file_name not in self.repairs_missing and not tolerate \
                    and not self.gone(o):
                raise self.refuse(self.main.manifest_path(m.file_name),
                                  f"named by the {role} manifest list {name} of {o.label}, does not exist")
            if m.schema_id not in self.schemas:
                raise self.refuse(self.main.manifest_path(m.file_name),
                                  f"named by the {role} manifest list {name} of {o.label}, was written with schema "
                                  f"{m.schema_id}, which the table does not have")
        return metas

    def owner(self, o: _Owner) -> None:
        s = o.snapshot
        if s.schema_id not in self.schemas:
            raise self.refuse(o.path, f"{o.label} names schema {s.schema_id}, which the table does not have")
        loose = o.kind == "changelog" and not self.producer_none
        self.read_list(o, s.base_manifest_list, "base", loose)
        self.read_list(o, s.delta_manifest_list, "delta", loose)
        if s.changelog_manifest_list:
            self.read_list(o, s.changelog_manifest_list, "changelog", o.kind == "tag")
        if s.index_manifest and s.index_manifest not in self.manifests and o.kind != "changelog" \
                and not self.gone(o):
            raise self.refuse(self.main.manifest_path(s.index_manifest), f"the index manifest of {o.label} does "
                                                                         "not exist")

    # ------------------------------------------------------------------ what no successor vouches for
    def delta_files_exist(self, o: _Owner, scanner: TableScanner) -> None:
        """A few of the files `o`'s delta adds exist (a delta list of another table names files this table never
        had): the first and the last it keeps live, found by one existence check each."""
        cols_list = [self.store.manifest_columns(m.file_name, o.label)
                     for m in self.lists.get(o.snapshot.delta_manifest_list, ())
                     if m.file_name not in self.repairs_missing]
        live: dict[str, tuple[mf.ManifestColumns, int]] = {}
        for cols in cols_list:
            for i, (kind, name) in enumerate(zip(cols.kind, cols.file_name)):
                if name in self.repairs_missing:
                    continue
                if kind == mf.FileKind.ADD:
                    live[name] = (cols, i)
                else:
                    live.pop(name, None)
        if not live:
            return
        names = list(live)
        for name in dict.fromkeys([names[0], names[-1]]):
            cols, i = live[name]
            external = any(cols.external_path)
            path = scanner.data_file_paths(cols)[i] if external else scanner.data_file_paths(cols, [i])[0]
            if not self.io.exists(path) and not self.gone(o):
                raise self.refuse(path, f"added by the delta manifest list {o.snapshot.delta_manifest_list} of "
                                        f"{o.label}, does not exist (a lost file, or a list of another table)")

    # ------------------------------------------------------------------ one history
    def net(self, names: Iterable[str]) -> int:
        return sum(m.num_added_files - m.num_deleted_files for n in names for m in self.lists[n])

    def successor(self, prev: _Owner, cur: _Owner) -> None:
        """`cur` (snapshot N) was committed on `prev` (N-1): its base is prev's base and delta, merged at most."""
        p, c = prev.snapshot, cur.snapshot
        if p.base_manifest_list not in self.lists or p.delta_manifest_list not in self.lists or \
                c.base_manifest_list not in self.lists:
            return  # (an owner removed while we read)
        before = collections.Counter(m.file_name for n in (p.base_manifest_list, p.delta_manifest_list)
                                     for m in self.lists[n])
        after = collections.Counter(m.file_name for m in self.lists[c.base_manifest_list])
        if before == after:
            return
        why = f"the base manifest list {c.base_manifest_list} of {cur.label} is not the history of {prev.label}"
        if self.net([c.base_manifest_list]) != self.net([p.base_manifest_list, p.delta_manifest_list]):
            raise self.refuse(self.main.manifest_path(c.base_manifest_list),
                              f"{why} (it lists {self.net([c.base_manifest_list])} live file entries, "
                              f"{prev.label} {self.net([p.base_manifest_list, p.delta_manifest_list])})")
        # a manifest merge (or a foreign list of the same size): every file's count compared on what differs
        signed = [(name, +1) for name, k in (after - before).items() for _ in range(k)] + \
                 [(name, -1) for name, k in (before - after).items() for _ in range(k)]
        names, signs = [], []
        for i in range(0, len(signed), DECODE_BATCH):
            chunk = signed[i:i + DECODE_BATCH]
            got = self.store.columns_many(list(dict.fromkeys(n for n, _ in chunk)), f"{cur.label}")
            for name, sign in chunk:
                cols = got.get(name)
                if cols is None:
                    raise self.refuse(self.main.manifest_path(name), f"named by {prev.label} or {cur.label}, does "
                                                                     "not exist")
                kinds = pa.array(cols.kind, pa.int8())
                names.append(pa.array(cols.file_name, pa.string()))
                signs.append(pc.multiply(pc.if_else(pc.equal(kinds, int(mf.FileKind.ADD)), 1, -1).cast(pa.int64()),
                                         sign))
        if not names:
            return
        counts = pa.table({"name": pa.concat_arrays(names), "n": pa.concat_arrays(signs)}) \
            .group_by("name").aggregate([("n", "sum")])
        off = counts.filter(pc.not_equal(counts["n_sum"], 0))
        if off.num_rows:
            raise self.refuse(self.main.manifest_path(c.base_manifest_list),
                              f"{why} (data file {off['name'][0].as_py()} is counted differently)")


def _owners(table: FileStoreTable) -> list[tuple[FileStoreTable, list[_Owner], list[_Owner], list[_Owner]]]:
    """Per branch: (its table, snapshots in id order, tags, long-lived changelogs). Unreadable owner files raise."""
    main = table if table.branch == "main" else table.for_branch("main")
    out = []
    for b in ["main"] + main.branches():
        try:
            bt = main if b == "main" else main.for_branch(b)
        except TableNotFoundError:
            if main.branch_holds_history(b):
                raise
            continue  # what an interrupted branch create or delete leaves: no schema, no history (as check_history)
        prefix = "" if b == "main" else f"branch {b} "
        kinds: dict[str, list[_Owner]] = {"snapshot": [], "changelog": [], "tag": []}
        for mgr, kind in ((bt.snapshots, "snapshot"), (bt.changelogs, "changelog")):
            for sid in mgr.list_ids():
                s = mgr.try_snapshot(sid)
                if s is not None:
                    kinds[kind].append(_Owner(kind, f"{prefix}{kind} {sid}", s, mgr.path(sid)))
        for name in bt.tags.names():
            try:
                t = bt.tags.tag(name)
            except InvalidArgumentError:
                continue  # deleted while listing
            kinds["tag"].append(_Owner("tag", f"{prefix}tag {name}", t, bt.tags.path(name)))
        out.append((bt, kinds["snapshot"], kinds["tag"], kinds["changelog"]))
    return out


def verify_lineage(table: FileStoreTable, what: str, repairs_missing: Collection[str] = ()) -> None:
    """Raise CorruptMetadataError unless every snapshot, tag and long-lived changelog of every branch names metadata
    that exists and is this table's history (module docstring); `what` names the operation refused. `repairs_missing`:
    manifests and data files the operation takes out of the table because they are missing (`Plan.repairs_missing`:
    remove-unexisting-files' narrow exemption) — their absence is not refused."""
    check = _Check(table, what, repairs_missing)
    branches = _owners(table)
    check.list_manifests()
    for bt, _, _, _ in branches:
        check.schemas.update(bt.schemas.list_ids())
    for bt, snapshots, tags, changelogs in branches:
        for o in snapshots + tags + changelogs:
            check.owner(o)
        by_id = {o.snapshot.id: o for o in snapshots}
        for o in snapshots:
            prev = by_id.get(o.snapshot.id - 1)
            if prev is not None:
                check.successor(prev, o)
        scanner = TableScanner(bt, check.store)
        for o in snapshots[-1:] + [o for o in tags if o.snapshot.id not in by_id]:
            check.delta_files_exist(o, scanner)
        for o in tags:
            s = by_id.get(o.snapshot.id)
            if s is not None and (o.snapshot.base_manifest_list, o.snapshot.delta_manifest_list) != \
                    (s.snapshot.base_manifest_list, s.snapshot.delta_manifest_list):
                raise check.refuse(o.path, f"{o.label} is of snapshot {o.snapshot.id} but names other manifest lists "
                                           f"({o.snapshot.base_manifest_list}, {o.snapshot.delta_manifest_list}) "
                                           f"than {s.label} ({s.snapshot.base_manifest_list}, "
                                           f"{s.snapshot.delta_manifest_list})")


def unvouched(table: FileStoreTable) -> list[tuple[str, Snapshot, bool]]:
    """The owners whose live files no successor vouches for (module docstring), per branch: (label, snapshot, whole):
    the newest snapshot (its delta; with `whole`, as the branch's only snapshot, its base too) and every tag whose
    snapshot is gone (its delta)."""
    out: list[tuple[str, Snapshot, bool]] = []
    for _, snapshots, tags, _ in _owners(table):
        if snapshots:
            out.append((snapshots[-1].label, snapshots[-1].snapshot, len(snapshots) == 1))
        ids = {o.snapshot.id for o in snapshots}
        out += [(o.label, o.snapshot, False) for o in tags if o.snapshot.id not in ids]
    return out


def unlisted_live_files(table: FileStoreTable, present: set[str], store: ManifestStore | None = None
                        ) -> tuple[str, str] | None:
    """(owner, data file) of a file an unvouched owner keeps live that is not among `present` (the names the
    table's data directories hold, external roots included), or None. Reads the deltas of those owners, and the
    base of a branch's only snapshot."""
    store = store or ManifestStore(table, capacity=STORE_CAPACITY)
    value_set: pa.Array | None = None
    for label, s, whole in unvouched(table):
        lists = [s.base_manifest_list, s.delta_manifest_list] if whole else [s.delta_manifest_list]
        metas = [m.file_name for lst in lists for m in store.manifest_list(lst, label)]
        names, signs = [], []
        for i in range(0, len(metas), DECODE_BATCH):
            got = store.columns_many(metas[i:i + DECODE_BATCH], label)
            for m in metas[i:i + DECODE_BATCH]:
                cols = got.get(m)
                if cols is None:
                    raise MissingFileError(table.manifest_path(m), label)
                names.append(pa.array(cols.file_name, pa.string()))
                signs.append(pc.if_else(pc.equal(pa.array(cols.kind, pa.int8()), int(mf.FileKind.ADD)), 1, -1)
                             .cast(pa.int64()))
        if not names:
            continue
        counts = pa.table({"name": pa.concat_arrays(names), "n": pa.concat_arrays(signs)}) \
            .group_by("name").aggregate([("n", "sum")])
        live = counts.filter(pc.greater(counts["n_sum"], 0))["name"]
        if value_set is None:
            value_set = pa.array(list(present), pa.string())
        missing = pc.invert(pc.is_in(live, value_set=value_set))
        hit = live.filter(missing)
        if len(hit):
            return label, hit[0].as_py()
    return None


__all__ = ["verify_lineage", "unvouched", "unlisted_live_files"]
