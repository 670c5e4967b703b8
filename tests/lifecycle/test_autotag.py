"""Automatic tags: options, Java's names, period arithmetic across DST and far zones, snapshot choice, idempotence,
backfill, expired / empty / idle periods, watermark mode, batch mode, the Dagster-facing API."""
from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pendulum
import pytest

import paimon_ops as po
from paimon_ops.errors import InvalidArgumentError, InvalidOptionError
from paimon_ops.lifecycle.autotag import (
    CONFLICT,
    CREATE,
    EMPTY,
    EXISTS,
    EXPIRED,
    IDLE,
    NOT_DUE,
    TOO_LATE,
    PeriodCannotBeTaggedError,
    PeriodNotDueError,
    create_tag_for_period,
    expected_tag_periods,
    latest_expected_tag,
    period_for_date,
    plan_auto_tags,
    tag_schedule,
)
from paimon_ops.lifecycle.periods import PeriodHandler
from paimon_ops.table.table import FileStoreTable
from tests.lifecycle.test_tags_util import (
    add_fake_snapshot,
    commit_rows,
    drop_snapshots_below,
    fake_history,
    hours,
    ms,
    real_table,
    tag_dir_listing,
    tag_ids,
)

DAY = 86_400_000


def statuses(report_or_plan) -> dict[str, tuple[str, int | None]]:
    return {p["period"]: (p["status"], p["snapshot_id"]) for p in report_or_plan.details["periods"]}


def with_options(table: FileStoreTable, opts: dict[str, str]) -> FileStoreTable:
    return FileStoreTable(table.root, table.identifier, options_override=opts, io=table.io)


# ---------------------------------------------------------------------------------------------- Java's names
@pytest.mark.parametrize("kind,length,formatter,local,name", [
    ("daily", DAY, "with_dashes", (2026, 11, 21), "2026-11-21"),
    ("daily", DAY, "without_dashes", (2026, 11, 21), "20261121"),
    ("daily", DAY, "without_dashes_and_spaces", (2026, 11, 21), "20261121"),
    ("hourly", 3_600_000, "with_dashes", (2026, 11, 21, 7), "2026-11-21 07"),
    ("hourly", 3_600_000, "without_dashes", (2026, 11, 21, 7), "20261121 07"),
    ("hourly", 3_600_000, "without_dashes_and_spaces", (2026, 11, 21, 7), "2026112107"),
    ("two-hours", 7_200_000, "without_dashes", (2026, 11, 21, 6), "2026-11-21 06"),  # formatter ignored (Java)
    ("duration", 1_800_000, "with_dashes", (2026, 11, 21, 6, 30), "202611210630"),
    ("days", 7 * DAY, "with_dashes", (2026, 11, 19), "2026-11-19"),
])
def test_java_period_names_round_trip(kind, length, formatter, local, name):
    h = PeriodHandler(kind, length, formatter)
    local_ms = ms(*local)
    assert h.format(local_ms) == name
    assert h.parse(name) == local_ms
    assert h.floor(local_ms) == local_ms


def test_java_lenient_parser_quirks():
    daily = PeriodHandler("daily", DAY, "with_dashes")
    assert daily.parse("2024-01-01 10") == ms(2024, 1, 1)  # daily keeps text before the first space
    assert daily.parse("2024-02-30") == ms(2024, 3, 1)  # ResolverStyle.LENIENT rolls over
    assert daily.parse("2024-13-01") == ms(2025, 1, 1)
    assert daily.parse("2024-00-10") == ms(2023, 12, 10)
    for not_auto in ("2024-1-01", "2024-01-1", "v2024-01-01", "2024-01-01x", "+2024-01-01", "", " ", "manual",
                     "2024/01/01", "12345678901-01-01"):
        assert daily.parse(not_auto) is None, not_auto
    compact = PeriodHandler("daily", DAY, "without_dashes")
    assert compact.parse("12345") is not None  # any 5..14 digits parse (adjacent value parsing): a Java quirk
    assert compact.parse("1234") is None
    assert compact.parse("123456789012345") is None
    hourly = PeriodHandler("hourly", 3_600_000, "with_dashes")
    assert hourly.parse("2024-01-01 24") == ms(2024, 1, 2)  # lenient hour
    assert hourly.parse("2024-01-01") is None
    assert PeriodHandler("daily", DAY, "with_dashes").numeric_names is False
    assert compact.numeric_names and PeriodHandler("duration", 60_000).numeric_names


# ---------------------------------------------------------------------------------------------- bad options
BAD_OPTIONS = [
    ({"tag.create-time": "25:00"}, "tag.create-time"),
    ({"tag.create-time": "7pm"}, "tag.create-time"),
    ({"tag.create-time": "12:60"}, "tag.create-time"),
    ({"tag.create-time": "7:30"}, "tag.create-time"),
    ({"tag.create-time": ""}, "tag.create-time"),
    ({"tag.create-time": "02:00", "tag.create-time-zone": "Mars/Olympus"}, "tag.create-time-zone"),
    ({"tag.create-time": "02:00", "tag.create-time-zone": "Europe/Berlin", "sink.process-time-zone": "UTC"},
     "tag.create-time-zone"),
    ({"tag.create-time": "02:00", "tag.creation-delay": "1 h"}, "tag.creation-delay"),
    ({"tag.create-time": "02:00", "tag.creation-period": "hourly"}, "tag.creation-period"),
    ({"tag.create-time": "02:00", "tag.create-interval": "36 h"}, "tag.create-interval"),
    ({"tag.create-time": "02:00", "tag.create-interval": "7"}, "tag.create-interval"),
    ({"tag.create-time": "02:00", "tag.automatic-creation": "batch"}, "tag.create-time"),
    ({"tag.create-time": "02:00", "tag.period-formatter": "slashes"}, "tag.period-formatter"),
    ({"tag.create-interval": "2 d"}, "tag.create-interval"),
    ({"tag.automatic-creation": "process-time", "tag.creation-delay": "1 d"}, "tag.creation-delay"),
    ({"tag.automatic-creation": "process-time", "tag.creation-period": "hourly", "tag.creation-delay": "90 min"},
     "tag.creation-delay"),
    ({"tag.automatic-creation": "process-time", "tag.creation-period": "weekly"}, "tag.creation-period"),
    ({"tag.automatic-creation": "sometimes"}, "tag.automatic-creation"),
    ({"tag.automatic-creation": "process-time", "sink.process-time-zone": "Nowhere/City"}, "sink.process-time-zone"),
    ({"tag.automatic-creation": "process-time", "tag.num-retained-max": "0"}, "tag.num-retained-max"),
    ({"tag.automatic-creation": "process-time", "tag.default-time-retained": "soon"}, "tag.default-time-retained"),
    ({"tag.automatic-creation": "batch", "tag.batch.customized-name": "a/b"}, "tag.batch.customized-name"),
]


@pytest.mark.parametrize("opts,option", BAD_OPTIONS)
def test_bad_options_clear_error_nothing_written(warehouse, opts, option):
    t = fake_history(warehouse, "bad", None, [ms(2026, 11, 20, 10), ms(2026, 11, 21, 10)])
    bad = with_options(t, opts)
    now = ms(2026, 11, 23)
    for call in (lambda: po.Table(bad).maintenance.create_auto_tags(now=now).execute(),
                 lambda: create_tag_for_period(bad, "2026-11-20", now),
                 lambda: plan_auto_tags(bad, now=now)):
        with pytest.raises(InvalidOptionError) as ei:
            call()
        assert repr(option) in str(ei.value) and "db.bad" in str(ei.value), str(ei.value)
    assert tag_dir_listing(t) == []


def test_not_configured_and_batch_have_no_periods(warehouse):
    t = fake_history(warehouse, "plain", None, [ms(2026, 11, 20, 10)])
    plan = plan_auto_tags(t, now=ms(2026, 11, 22))
    assert not plan.writes and "not configured" in plan.warnings[0]
    for call in (lambda: create_tag_for_period(t, "2026-11-20", ms(2026, 11, 22)),
                 lambda: period_for_date(t, dt.date(2026, 11, 20)),
                 lambda: create_tag_for_period(with_options(t, {"tag.automatic-creation": "batch"}), "2026-11-20")):
        with pytest.raises(InvalidArgumentError, match="tag.create-time|batch"):
            call()


def test_period_name_argument_errors(warehouse):
    t = fake_history(warehouse, "names", {"tag.create-time": "00:00"}, [ms(2026, 11, 20, 10)])
    with pytest.raises(InvalidArgumentError, match="did you mean '2026-12-01'"):
        create_tag_for_period(t, "2026-11-31", ms(2026, 12, 5))
    with pytest.raises(InvalidArgumentError, match="neither a period name"):
        create_tag_for_period(t, "yesterday", ms(2026, 12, 5))
    assert period_for_date(t, "2026-11-20T23:59:00").name == "2026-11-20"
    assert period_for_date(t, dt.datetime(2026, 11, 20, 23, 0, tzinfo=dt.timezone.utc)).name == "2026-11-20"
    assert tag_dir_listing(t) == []


# ---------------------------------------------------------------------------------------------- DST
def _first_instant_reading(zone: str, local: dt.datetime) -> int:
    """Independent check: the first UTC minute whose wall clock in `zone` reads >= `local`."""
    z = ZoneInfo(zone)
    t = dt.datetime(local.year, local.month, local.day, tzinfo=dt.timezone.utc) - dt.timedelta(days=1)
    while t.astimezone(z).replace(tzinfo=None) < local:
        t += dt.timedelta(minutes=1)
    return int(t.timestamp() * 1000)


@pytest.mark.parametrize("zone,create_time,transition_day,deadline_utc", [
    ("Europe/Berlin", "02:30", (2026, 3, 29), (2026, 3, 29, 1, 0)),  # skipped hour: at the transition (03:00 CEST)
    ("Europe/Berlin", "02:30", (2026, 10, 25), (2026, 10, 25, 0, 30)),  # repeated hour: first 02:30 (CEST)
    ("America/New_York", "02:30", (2026, 3, 8), (2026, 3, 8, 7, 0)),
    ("America/New_York", "01:30", (2026, 11, 1), (2026, 11, 1, 5, 30)),
])
def test_dst_one_tag_per_day_on_time_equals_backfill(warehouse, zone, create_time, transition_day, deadline_utc):
    """Commits every 30 min for 4 days around a DST change; the job runs after every commit (on time). Exactly one
    tag per day, created exactly at its deadline, on the latest snapshot committed at or before it — and a
    single backfill run over the same history gives the same tags."""
    day0 = pendulum.datetime(*transition_day, tz=zone).subtract(days=2)
    start = int(day0.in_timezone("UTC").timestamp() * 1000)
    times = [start + i * 1_800_000 for i in range(4 * 48)]
    opts = {"tag.create-time": create_time, "tag.create-time-zone": zone}
    t = fake_history(warehouse, "dst", opts, times[:1])
    first_seen: dict[str, int] = {}
    for at in times:
        if at != times[0]:
            add_fake_snapshot(t, at)
        po.Table(t.refresh()).maintenance.create_auto_tags(now=at).execute()
        for name in tag_ids(t):
            first_seen.setdefault(name, at)
    got = tag_ids(t)
    hh, mm = map(int, create_time.split(":"))
    expected = {}
    for d in range(-3, 3):
        date = pendulum.date(*transition_day).add(days=d)
        deadline = _first_instant_reading(zone, dt.datetime(date.year, date.month, date.day, hh, mm) + dt.timedelta(days=1))
        if times[0] <= deadline <= times[-1]:
            expected[date.isoformat()] = (deadline, max(i + 1 for i, at in enumerate(times) if at <= deadline))
    assert got == {n: sid for n, (_, sid) in expected.items()}
    assert {n: first_seen[n] for n in got} == {n: dl for n, (dl, _) in expected.items()}
    # the day before the transition is tagged at the expected instant
    before = pendulum.date(*transition_day).subtract(days=1).isoformat()
    assert expected[before][0] == ms(*deadline_utc)
    assert period_for_date(t, pendulum.date(*transition_day).subtract(days=1)).due_millis == ms(*deadline_utc)

    backfilled = fake_history(warehouse, "dst_backfill", opts, times)
    report = po.Table(backfilled).maintenance.create_auto_tags(now=times[-1]).execute()
    assert tag_ids(backfilled) == got
    assert report.details["created"] == sorted(got)


@pytest.mark.parametrize("zone,create_time,day,length_h", [
    ("Europe/Berlin", "00:00", (2026, 3, 29), 23), ("Europe/Berlin", "00:00", (2026, 10, 25), 25),
    ("America/New_York", "03:00", (2026, 3, 8), 23), ("America/New_York", "03:00", (2026, 11, 1), 25),
])
def test_dst_period_bounds(warehouse, zone, create_time, day, length_h):
    t = fake_history(warehouse, "bounds", {"tag.create-time": create_time, "tag.create-time-zone": zone},
                     [ms(2026, 1, 1)])
    p = period_for_date(t, pendulum.date(*day))
    assert p.name == pendulum.date(*day).isoformat()
    assert (p.start.hour, p.start.minute, p.end.hour) == (0, 0, 0)
    assert p.end_millis - p.start_millis == hours(length_h)
    assert str(p.start.tz.name) == zone and p.due == pendulum.datetime(*day, tz=zone).add(days=1).at(
        *map(int, create_time.split(":")))


# ---------------------------------------------------------------------------------------------- far zones
@pytest.mark.parametrize("zone,offset_h", [("Pacific/Kiritimati", 14), ("Pacific/Pago_Pago", -11)])
def test_far_zones_name_by_local_date(warehouse, zone, offset_h):
    # hourly commits over 3 UTC days; tag.create-time 00:15 local
    times = [ms(2026, 11, 19) + i * 3_600_000 for i in range(72)]
    t = fake_history(warehouse, "far", {"tag.create-time": "00:15", "tag.create-time-zone": zone}, times)
    now = times[-1]
    po.Table(t).maintenance.create_auto_tags(now=now).execute()
    got = tag_ids(t)
    for name, sid in got.items():
        d = pendulum.parse(name).date()
        deadline = ms(d.year, d.month, d.day, 0, 15) + DAY - hours(offset_h)
        assert times[sid - 1] <= deadline < times[sid - 1] + 3_600_000 or sid == len(times)
    # a UTC instant on 2026-11-20 10:00 is 11-21 00:00 in Kiritimati and 11-19 23:00 in Pago Pago
    p = period_for_date(t, ms(2026, 11, 20, 10))
    assert p.name == ("2026-11-21" if offset_h > 0 else "2026-11-19")
    expected_names = {p.name for p in expected_tag_periods(t, ms(2026, 11, 15), ms(2026, 11, 25), now)
                      if p.due_millis >= times[0]}
    assert set(got) == expected_names
    assert latest_expected_tag(t, now) == max(got)


def test_java_mode_hourly_with_delay_and_process_zone(warehouse):
    opts = {"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
            "tag.creation-delay": "10 min", "sink.process-time-zone": "Asia/Kolkata"}  # +05:30
    times = [ms(2026, 11, 21, 0, 5) + i * 20 * 60_000 for i in range(9)]  # 00:05 .. 02:45 UTC, every 20 min
    t = fake_history(warehouse, "hourly", opts, times)
    r = po.Table(t).maintenance.create_auto_tags(now=ms(2026, 11, 21, 3)).execute()
    got = tag_ids(t)
    # local 05:35 .. 08:15; hour H is due at H+1:10 local -> hours 05, 06, 07 are due by 08:30 local
    assert set(got) == {"2026-11-21 05", "2026-11-21 06", "2026-11-21 07"}
    # hour 06 (local) ends 07:00 = 01:30 UTC, due 01:40 UTC: the latest commit at or before is 01:25 UTC (#5)
    assert got["2026-11-21 06"] == 5
    assert r.details["mode"] == "process-time" and r.details["zone"] == "Asia/Kolkata"


# ---------------------------------------------------------------------------------------------- snapshot choice
def test_latest_snapshot_at_or_before_deadline_not_first_after(warehouse):
    times = [ms(2026, 11, 20, 9), ms(2026, 11, 20, 23, 59), ms(2026, 11, 21, 2, 0), ms(2026, 11, 21, 2, 1)]
    t = fake_history(warehouse, "choice", {"tag.create-time": "02:00"}, times)
    d = statuses(po.Table(t).maintenance.create_auto_tags(now=ms(2026, 11, 22, 3)).execute())
    # deadline 11-21 02:00 is inclusive: snapshot 3 (exactly at 02:00) -> Java would pick 3 as well here, but a
    # snapshot one minute later (#4) is never taken for 11-20
    assert d["2026-11-20"] == (CREATE, 3)
    assert tag_ids(t) == {"2026-11-20": 3, "2026-11-21": 4}


def test_idempotent_and_conflict_left_unchanged(warehouse):
    times = [ms(2026, 11, 20, 10), ms(2026, 11, 21, 10), ms(2026, 11, 22, 10)]
    t = fake_history(warehouse, "idem", {"tag.create-time": "00:00"}, times)
    now = ms(2026, 11, 23, 1)
    first = po.Table(t).maintenance.create_auto_tags(now=now).execute()
    assert first.details["created"] == ["2026-11-20", "2026-11-21", "2026-11-22"]
    before = {n: t.io.read_bytes(t.tags.path(n)) for n in tag_ids(t)}
    again = po.Table(t).maintenance.create_auto_tags(now=now).execute()
    assert again.details["created"] == [] and again.written == {}
    assert {n: t.io.read_bytes(t.tags.path(n)) for n in tag_ids(t)} == before
    # explicit periods: exists -> no-op
    r = create_tag_for_period(t, "2026-11-21", now)
    assert (r.details["status"], r.details["snapshot_id"]) == (EXISTS, 2)
    # someone re-pointed a tag: left alone, reported
    t.tags.write("2026-11-21", t.tags.tag("2026-11-22"))
    r = create_tag_for_period(t, "2026-11-21", now)
    assert r.details["status"] == CONFLICT and "left unchanged" in r.details["reason"]
    assert any("conflict" in w for w in r.warnings)
    assert tag_ids(t)["2026-11-21"] == 3


def test_not_due_error_then_created_when_due(warehouse):
    times = [ms(2026, 11, 20, 10), ms(2026, 11, 21, 5)]
    t = fake_history(warehouse, "due", {"tag.create-time": "06:00", "tag.create-time-zone": "Europe/Berlin"}, times)
    with pytest.raises(PeriodNotDueError, match="not due yet.*2026-11-21T06:00:00\\+01:00"):
        create_tag_for_period(t, "2026-11-20", ms(2026, 11, 21, 4, 59))  # 05:59 Berlin
    assert tag_dir_listing(t) == []
    r = create_tag_for_period(t, dt.date(2026, 11, 20), ms(2026, 11, 21, 5))  # 06:00 Berlin
    assert (r.details["status"], r.details["snapshot_id"]) == (CREATE, 2) and r.written == {"tag": 1}
    with pytest.raises(PeriodNotDueError):
        create_tag_for_period(t, "2026-11-21", ms(2026, 11, 21, 5))


def test_backfill_later_equals_on_time(warehouse):
    times = [ms(2026, 11, d, h) for d in (20, 21, 22, 23) for h in (3, 11, 19)]
    on_time = fake_history(warehouse, "ontime", {"tag.create-time": "04:00"}, times)
    late = fake_history(warehouse, "late", {"tag.create-time": "04:00"}, times)
    for d in (21, 22, 23):
        po.Table(on_time).maintenance.create_auto_tags(now=ms(2026, 11, d, 4)).execute()
    # the late job missed two days, then backfills the missing periods one by one (Dagster partitions)
    for name in ("2026-11-21", "2026-11-19", "2026-11-20"):
        create_tag_for_period(late, name, ms(2026, 11, 23, 12))
    po.Table(late).maintenance.create_auto_tags(now=ms(2026, 11, 23, 12)).execute()
    assert tag_ids(late) == tag_ids(on_time) == {"2026-11-19": 1, "2026-11-20": 4, "2026-11-21": 7, "2026-11-22": 10}


def test_expired_snapshot_reported_never_substituted(warehouse):
    times = [ms(2026, 11, d, 12) for d in range(15, 23)]  # snapshots 1..8, one a day at noon
    t = fake_history(warehouse, "exp", {"tag.create-time": "00:00"}, times)
    drop_snapshots_below(t, 5)  # snapshots 1..4 (11-15 .. 11-18) expired, nothing tagged
    t = t.refresh()
    now = ms(2026, 11, 23, 1)
    with pytest.raises(PeriodCannotBeTaggedError, match="expired.*not tagging a different snapshot"):
        create_tag_for_period(t, "2026-11-17", now)
    r = po.Table(t).maintenance.create_auto_tags(now=now, periods=["2026-11-16", "2026-11-19"]).execute()
    assert statuses(r) == {"2026-11-16": (EXPIRED, None), "2026-11-19": (CREATE, 5)}
    assert tag_ids(t) == {"2026-11-19": 5}
    assert any("2026-11-16: expired" in w for w in r.warnings)


def test_gap_after_last_auto_tag_reported_once_then_resumes(warehouse):
    times = [ms(2026, 11, d, 12) for d in range(15, 23)]
    t = fake_history(warehouse, "gap", {"tag.create-time": "00:00"}, times)
    t.tags.write("2026-11-14", _tag_of(t, 1))  # an old auto tag holds snapshot 1
    drop_snapshots_below(t, 5)
    t = t.refresh()
    r = po.Table(t).maintenance.create_auto_tags(now=ms(2026, 11, 23, 1)).execute()
    assert [w for w in r.warnings if "2026-11-15 .. 2026-11-18" in w and "expired" in w]
    assert r.details["created"] == ["2026-11-19", "2026-11-20", "2026-11-21", "2026-11-22"]
    assert tag_ids(t) == {"2026-11-14": 1, "2026-11-19": 5, "2026-11-20": 6, "2026-11-21": 7, "2026-11-22": 8}
    assert po.Table(t).maintenance.create_auto_tags(now=ms(2026, 11, 23, 1)).execute().warnings == ()


def test_tag_held_expired_snapshot_is_used_when_its_successor_is_known(warehouse):
    times = [ms(2026, 11, d, 12) for d in range(15, 20)]
    t = fake_history(warehouse, "held", {"tag.create-time": "00:00"}, times)
    t.tags.write("manual", _tag_of(t, 3))
    drop_snapshots_below(t, 4)
    t = t.refresh()
    now = ms(2026, 11, 21)
    # 11-17 ends 11-18 00:00: latest at or before is snapshot 3 (expired, tag-held) and snapshot 4 is live
    r = create_tag_for_period(t, "2026-11-17", now)
    assert (r.details["status"], r.details["snapshot_id"]) == (CREATE, 3)
    # 11-16: snapshot 2 is gone and nothing says what followed it -> expired
    with pytest.raises(PeriodCannotBeTaggedError):
        create_tag_for_period(t, "2026-11-16", now)


def _tag_of(t: FileStoreTable, sid: int):
    from paimon_ops.format.snapshot import Tag
    return Tag.from_snapshot(t.snapshots.snapshot(sid))


def test_empty_period_before_first_snapshot_is_not_tagged(warehouse):
    t = fake_history(warehouse, "empty", {"tag.create-time": "00:00"}, [ms(2026, 11, 21, 15)])
    r = create_tag_for_period(t, "2026-11-20", ms(2026, 11, 23))
    assert r.details["status"] == EMPTY and r.written == {} and "no snapshot" in r.details["reason"]
    r = po.Table(t).maintenance.create_auto_tags(now=ms(2026, 11, 23)).execute()
    assert r.details["created"] == ["2026-11-21"]  # starts at the first period whose deadline follows snapshot 1
    assert tag_ids(t) == {"2026-11-21": 1}


@pytest.mark.parametrize("completion,java_auto,expected", [
    (False, False, {"2026-11-20": 1, "2026-11-23": 2}),
    (True, False, {"2026-11-20": 1, "2026-11-21": 1, "2026-11-22": 1, "2026-11-23": 2}),
    (True, True, {"2026-11-20": 1, "2026-11-23": 2}),
])
def test_idle_periods_and_automatic_completion(warehouse, completion, java_auto, expected):
    opts = {"tag.create-time": "00:00", "tag.automatic-completion": str(completion).lower()}
    if java_auto:
        opts["tag.automatic-creation"] = "process-time"
    t = fake_history(warehouse, "idle", opts, [ms(2026, 11, 20, 10), ms(2026, 11, 23, 10)])
    r = po.Table(t).maintenance.create_auto_tags(now=ms(2026, 11, 24, 1)).execute()
    assert tag_ids(t) == expected
    if expected.keys() != {"2026-11-20", "2026-11-21", "2026-11-22", "2026-11-23"}:
        assert r.details["idle"] == ["2026-11-21", "2026-11-22"]
    # the asset check: the newest period that should carry a tag
    assert latest_expected_tag(t, ms(2026, 11, 24, 1)) == "2026-11-23"
    assert latest_expected_tag(t, ms(2026, 11, 23, 1)) == ("2026-11-22" if completion and not java_auto
                                                           else "2026-11-20")
    # a Dagster partition of an idle day succeeds with status idle (or exists)
    rep = create_tag_for_period(t, "2026-11-22", ms(2026, 11, 24, 1))
    assert rep.details["status"] == (EXISTS if "2026-11-22" in expected else IDLE)


def test_java_auto_never_puts_two_auto_tags_on_one_snapshot(warehouse):
    """Java names the first snapshot after a boundary; ours the last one before. On a table Java also auto-tags,
    the clash is reported and nothing is written that would give one snapshot two auto tags."""
    opts = {"tag.automatic-creation": "process-time"}
    t = fake_history(warehouse, "two", opts, [ms(2026, 11, 20, 10), ms(2026, 11, 21, 10), ms(2026, 11, 22, 10)])
    t.tags.write("2026-11-21", _tag_of(t, 3))  # what Java's rule gives: first snapshot after 11-22 00:00
    r = po.Table(t).maintenance.create_auto_tags(now=ms(2026, 11, 23, 1), periods=["2026-11-21", "2026-11-22"]).execute()
    s = statuses(r)
    assert s["2026-11-21"] == (CONFLICT, 3)  # exists on 3, ours would be 2: left unchanged
    assert s["2026-11-22"] == (CONFLICT, 3) and any("already carries auto tag '2026-11-21'" in w for w in r.warnings)
    assert tag_ids(t) == {"2026-11-21": 3}


def test_default_time_retained_on_auto_tags(warehouse):
    opts = {"tag.create-time": "00:00", "tag.default-time-retained": "3 d",
            "tag.create-time-zone": "Pacific/Kiritimati", "sink.process-time-zone": "Pacific/Kiritimati"}
    t = fake_history(warehouse, "ret", opts, [ms(2026, 11, 20, 10)])  # = 11-21 00:00 in Kiritimati
    po.Table(t).maintenance.create_auto_tags(now=ms(2026, 11, 22, 1)).execute()
    assert tag_ids(t) == {"2026-11-20": 1}  # committed exactly at the deadline (inclusive); 11-21 is idle
    tag = t.tags.tag("2026-11-20")
    # tagCreateTime is the local now of the tag local zone (sink.process-time-zone)
    assert tag.tag_create_time == dt.datetime(2026, 11, 22, 15, 0)
    assert tag.tag_time_retained == dt.timedelta(days=3)


def test_n_day_interval_aligned_like_java_durations(warehouse):
    opts = {"tag.create-time": "01:00", "tag.create-interval": "7 d"}
    times = [ms(2026, 11, 1) + i * 12 * 3_600_000 for i in range(40)]
    t = fake_history(warehouse, "weekly", opts, times)
    r = po.Table(t).maintenance.create_auto_tags(now=times[-1]).execute()
    # 1970-01-01 was a Thursday: 7-day periods start on Thursdays
    for name in tag_ids(t):
        assert pendulum.parse(name).day_of_week == pendulum.THURSDAY
    assert r.details["created"] == ["2026-10-29", "2026-11-05", "2026-11-12"]
    p = period_for_date(t, dt.date(2026, 11, 8))
    assert (p.name, p.end_millis - p.start_millis, p.due_millis) == ("2026-11-05", 7 * DAY, ms(2026, 11, 12, 1))
    assert tag_schedule(t).describe()["period"] == "every 7 d"


# ---------------------------------------------------------------------------------------------- watermark mode
def test_watermark_mode_first_snapshot_reaching_and_max_delay_guard(warehouse):
    opts = {"tag.automatic-creation": "watermark", "sink.watermark-time-zone": "UTC"}
    times = [ms(2026, 11, 25, h) for h in range(7)]
    wms = [None, ms(2026, 11, 20, 12), ms(2026, 11, 21, 0), ms(2026, 11, 21, 6), ms(2026, 11, 24, 3),
           ms(2026, 11, 24, 9), -(1 << 63)]
    t = fake_history(warehouse, "wm", opts, times, wms)
    r = po.Table(t).maintenance.create_auto_tags(now=ms(2020, 1, 1), periods=["2026-11-19", "2026-11-20", "2026-11-21",
                                                                  "2026-11-22", "2026-11-23", "2026-11-24"]).execute()
    s = statuses(r)
    assert s["2026-11-19"] == (CREATE, 2)  # 1st watermark 11-20 12:00 is within one day of 11-20 00:00
    assert s["2026-11-20"] == (CREATE, 3)  # watermark exactly 11-21 00:00 reaches the deadline
    # the jump from 11-21 06:00 to 11-24 03:00 in one snapshot: too late for 11-21/11-22, it is 11-23's tag
    assert s["2026-11-21"][0] == TOO_LATE and s["2026-11-22"][0] == TOO_LATE
    assert s["2026-11-23"] == (CREATE, 5)
    assert s["2026-11-24"] == (NOT_DUE, None)
    assert any("tag.create-max-delay" in w for w in r.warnings)
    with pytest.raises(PeriodCannotBeTaggedError, match="past it"):
        create_tag_for_period(t, "2026-11-22", ms(2020, 1, 1))
    # due periods without periods=: starts one max-delay before the first watermark, stops at the max watermark
    t2 = fake_history(warehouse, "wm2", opts, times, wms)
    assert po.Table(t2).maintenance.create_auto_tags(now=ms(2020, 1, 1)).execute().details["created"] == ["2026-11-19", "2026-11-20",
                                                                                    "2026-11-23"]


# ---------------------------------------------------------------------------------------------- batch mode
def test_batch_mode_creates_and_replaces_with_reclamation(warehouse):
    t = real_table(warehouse, "batch", {"tag.automatic-creation": "batch"}, [ms(2026, 11, 21, 9)])
    r = po.Table(t).maintenance.create_auto_tags().execute()
    assert tag_ids(t) == {"batch-write-2026-11-21": 1} and r.written == {"tag": 1}
    assert po.Table(t).maintenance.create_auto_tags().execute().written == {}  # same snapshot: no-op
    commit_rows(t, [5], ms(2026, 11, 21, 18))
    dry = po.Table(t.refresh()).maintenance.create_auto_tags().dry_run_report()
    assert dry.dry_run and tag_ids(t) == {"batch-write-2026-11-21": 1}
    r = po.Table(t.refresh()).maintenance.create_auto_tags().execute()
    assert tag_ids(t) == {"batch-write-2026-11-21": 2}
    assert r.details["status"] == "replace" and r.deleted.get("tag") == 1 and r.written == {"tag": 1}
    named = with_options(t, {"tag.batch.customized-name": "nightly"})
    po.Table(named).maintenance.create_auto_tags().execute()
    assert tag_ids(t)["nightly"] == 2


# ---------------------------------------------------------------------------------------------- calendar API
def test_expected_periods_period_for_date_and_plan_is_dry(warehouse):
    opts = {"tag.create-time": "02:30", "tag.create-time-zone": "Europe/Berlin"}
    t = fake_history(warehouse, "cal", opts, [ms(2026, 11, 18, 12), ms(2026, 11, 20, 12)])
    now = ms(2026, 11, 21, 1, 29)  # 02:29 Berlin: 11-20 is not due yet
    ps = expected_tag_periods(t, dt.date(2026, 11, 17), dt.date(2026, 11, 25), now)
    assert [p.name for p in ps] == ["2026-11-17", "2026-11-18", "2026-11-19"]
    assert ps[0].start == pendulum.datetime(2026, 11, 17, tz="Europe/Berlin")
    assert ps[0].due == pendulum.datetime(2026, 11, 18, 2, 30, tz="Europe/Berlin")
    plan = plan_auto_tags(t, now=now)
    assert [a.path.rsplit("tag-", 1)[1] for a in plan.writes] == ["2026-11-18"]
    assert statuses(plan) == {"2026-11-18": (CREATE, 1), "2026-11-19": (IDLE, 1)}
    assert tag_dir_listing(t) == []  # planning writes nothing
    assert po.Table(t).maintenance.create_auto_tags(now=now).dry_run_report().files[0].path == plan.writes[0].path
    assert tag_dir_listing(t) == []
    assert latest_expected_tag(t, now) == "2026-11-18"
    assert latest_expected_tag(t, ms(2026, 11, 21, 1, 30)) == "2026-11-20"
    assert latest_expected_tag(t, ms(2026, 11, 18, 1, 30)) is None


def test_numeric_period_names_of_the_tables_own_formatter_are_created(warehouse):
    """Paimon's without_dashes daily names are all digits; Java creates and expires tags by exactly these names,
    so auto tags may carry them — while a user-supplied numeric tag name is still refused."""
    from paimon_ops.errors import InvalidArgumentError

    t = fake_history(warehouse, "compact_names", None, [ms(2026, 11, 20, 10), ms(2026, 11, 21, 10)])
    t = with_options(t, {"tag.create-time": "02:00", "tag.period-formatter": "without_dashes"})
    report = po.Table(t).maintenance.create_auto_tags(now=ms(2026, 11, 22, 3)).execute()
    assert "20261121" in t.tags.names() and "20261120" in t.tags.names(), report
    with pytest.raises(InvalidArgumentError, match="numeric"):
        po.Table(t).tags.create("20261125").execute()
