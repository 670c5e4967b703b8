"""FileList (execution.files): the column-wise sequence of FileActions that plans and reports hold is exactly the
sequence it was made of — elements, order, equality with tuples, slices, concatenation, pickling — and its
column-wise answers (counts and bytes by kind, groups by directory, names, kinds) equal the per-element ones."""
from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_ops.execution.files import FileAction, FileList, FileParts
from paimon_ops.execution.plan import DELETE_FILES, PlanBuilder, Step, bytes_by_kind, count_by_kind

_segment = st.sampled_from(["", ".", "..", "a", "bucket-0", "dt=2026-01-01", "x y", "é"])
_path = st.lists(_segment, min_size=1, max_size=4).map("/".join) | st.sampled_from(["/", "//", "/x", "x", "a//b/"])
_action = st.builds(FileAction, _path, st.sampled_from(["data", "manifest", "orphan"]),
                    st.sampled_from(["r1", "r2"]), st.none() | st.integers(-5, 2 ** 62))


def _loop_counts(actions):
    out: dict[str, int] = {}
    for a in actions:
        out[a.kind] = out.get(a.kind, 0) + 1
    return out


def _loop_bytes(actions):
    out: dict[str, int] = {}
    for a in actions:
        out[a.kind] = out.get(a.kind, 0) + (a.size or 0)
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(_action, max_size=30), st.lists(_action, max_size=5))
def test_same_sequence_and_same_answers(actions, more):
    f = FileList(actions)
    assert list(f) == actions and f == tuple(actions) and f == actions and len(f) == len(actions)
    assert [f[i] for i in range(len(f))] == actions and (not actions or f[-1] == actions[-1])
    assert list(f[1:4]) == actions[1:4] and list(f[::2]) == actions[::2]
    assert list(f.paths()) == [a.path for a in actions]
    assert list(f.names) == [a.path.rpartition("/")[2] for a in actions]
    assert list(f.kind_iter()) == [a.kind for a in actions]
    assert f.kind_counts() == _loop_counts(actions) and count_by_kind(f) == _loop_counts(actions)
    assert f.kind_bytes() == _loop_bytes(actions) and bytes_by_kind(f) == _loop_bytes(actions)
    assert f.total_bytes() == sum(a.size or 0 for a in actions)
    assert f.any_sized() == any(a.size for a in actions)
    assert list(f + tuple(more)) == actions + more and list(tuple(more) + f) == more + actions
    assert list(FileList.concat([f, FileList(more), ()])) == actions + more
    assert pickle.loads(pickle.dumps(f)) == f
    assert list(f.where_kind(["data"])) == [a for a in actions if a.kind == "data"]
    # groups: by the directory rpartition gives, first appearance order, order kept within a directory
    groups: dict[str, list[FileAction]] = {}
    for a in actions:
        groups.setdefault(a.path.rpartition("/")[0], []).append(a)
    merged: dict[str, list[FileAction]] = {}
    for d, g in f.by_directory():
        merged.setdefault(d, []).extend(g)
    assert merged == groups
    assert sorted(map(repr, f.in_directory_order())) == sorted(map(repr, actions))


def test_equality_and_hash_follow_the_elements():
    a = [FileAction("/t/b/x", "data", "r", 1), FileAction("/t/b/y", "data", "r", None)]
    assert FileList(a) == FileList(tuple(a)) and hash(FileList(a)) == hash(tuple(a))
    assert FileList(a) != FileList(a[:1]) and FileList(a) != FileList([FileAction("/t/b/x", "data", "r", 2), a[1]])
    assert FileList(a) != "not files"


def test_steps_and_builder_hold_file_lists():
    a = [FileAction(f"/t/p={i % 3}/bucket-0/data-{i}", "data", "r", i) for i in range(10)]
    assert isinstance(Step("s", DELETE_FILES, tuple(a)).files, FileList)
    b = PlanBuilder()
    b.step("one", DELETE_FILES).add_all(a + a[:3])  # a path is planned once
    b.step("two", DELETE_FILES).add_all(a[5:])      # ... by the first step that plans it
    b._close()
    assert [list(s.files) for s in b.steps] == [a]
    assert b.planned(a[4].path) and not b.planned("/t/p=0/bucket-0/data-99")


def test_parts_concatenate_on_demand():
    parts = FileParts()
    parts += FileList([FileAction("/a/x", "data", "r", 1)])
    parts += []
    parts += [FileAction("/b/y", "manifest", "r", 2)]
    assert len(parts) == 2 and [a.path for a in parts.all()] == ["/a/x", "/b/y"]
