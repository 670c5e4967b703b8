"""Branches on an object store (the S3 server): rename has no directory to rename, so every file is copied (schema
first) and then removed (schema last); a rename interrupted at any write or delete is finished with `resume`, and
the branch then reads exactly as before. Deletion reclaims the branch's own files there too."""
from __future__ import annotations

import shutil

import pytest

import paimon_ops as po
from paimon_ops.table.fileio import InjectedFault, fault_after
from tests.lifecycle.helpers import check_references, fast_tmpdir, views
from tests.lifecycle.test_branches import _history


@pytest.fixture
def s3_table(s3_env, bucket):
    local = fast_tmpdir("branches-s3-")
    _history(local)
    s3_env.upload(local, bucket, "wh")
    yield f"s3://{bucket}/wh", s3_env, bucket, local
    shutil.rmtree(local, ignore_errors=True)


def _keys(server, bucket: str, part: str) -> set[str]:
    return {k.split(part, 1)[1] for k in server.keys(bucket, "wh/") if part in k}


def test_rename_file_by_file_resumes_after_a_fault_and_delete_reclaims(s3_table):
    wh, server, bucket, local = s3_table
    t = po.Catalog(wh).get_table("db.t")
    before = views(t.raw.for_branch("dev"))
    files = _keys(server, bucket, "branch/branch-dev/")
    with pytest.raises(Exception) as failed:  # noqa: PT011 - the injected fault, possibly wrapped
        faulty = t.raw.with_fault_hook(fault_after("delete", 3))
        po.Table(faulty).maintenance.rename_branch("dev", "prod").execute(table=faulty)
    chain = [failed.value]
    while chain[-1].__cause__ or chain[-1].__context__:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
    assert any(isinstance(x, InjectedFault) for x in chain)
    assert _keys(server, bucket, "branch/branch-prod/") == files  # every file copied before the first removal
    with pytest.raises(po.InvalidArgumentError, match="--resume|resume"):
        po.Catalog(wh).get_table("db.t").maintenance.rename_branch("dev", "prod")
    po.Catalog(wh).get_table("db.t").maintenance.rename_branch("dev", "prod", resume=True).execute()
    t = po.Catalog(wh).get_table("db.t")
    assert t.raw.branches() == ["prod"] and not _keys(server, bucket, "branch/branch-dev/")
    assert views(t.raw.for_branch("prod")) == before
    main_views = views(t.raw)
    r = t.maintenance.delete_branch("prod").execute()
    assert r.deleted.get("data", 0) >= 2 and not _keys(server, bucket, "branch/")
    t = po.Catalog(wh).get_table("db.t")
    assert views(t.raw) == main_views
    copy = fast_tmpdir("branches-s3-back-")
    server.download(bucket, "wh", copy)  # every file a retained snapshot or tag of main references is there
    check_references(po.Catalog(copy).get_table("db.t").raw)
    shutil.rmtree(copy, ignore_errors=True)
