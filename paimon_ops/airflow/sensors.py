"""`PaimonTableHealthSensor`: waits until a table needs work — any of `signals` (default: all of
`paimon_ops.health.SIGNALS`) due — and returns the assessment (XCom): the due signals, their figures, and per signal
the operation and arguments that do the work (e.g. `{"operation": "compact", "arguments": {"mode": "minor",
"buckets": [0]}}`).

Deferrable by default: after one check on the worker it hands the wait to `PaimonTableHealthTrigger` in the
triggerer, holding no worker slot; `deferrable=False` pokes on the worker instead (`mode="reschedule"` frees the slot
between pokes)."""
from __future__ import annotations

import datetime as _dt
from typing import Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException

from paimon_ops.airflow.hooks import DEFAULT_CONN_ID, PaimonHook
from paimon_ops.airflow.triggers import PaimonTableHealthTrigger, _check
from paimon_ops.errors import InvalidArgumentError
from paimon_ops.health import SIGNALS, signal_names


class PaimonTableHealthSensor(BaseSensorOperator):
    """Waits until `table` needs work — any of `signals` due (small_files, dv_ratio, snapshots, manifests,
    partitions; default all) — and returns the assessment: per due signal the operation and its arguments. Deferrable
    by default (the wait runs in the triggerer)."""

    template_fields = ("table", "conn_id", "signals")
    ui_color = "#e8f4e3"

    def __init__(self, *, table: str, conn_id: str = DEFAULT_CONN_ID, signals: list[str] | None = None,
                 deferrable: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("poke_interval", 60)
        super().__init__(**kwargs)
        self.table = table
        self.conn_id = conn_id
        try:  # (their former names are read too: snapshots, manifests, partitions)
            self.signals = signal_names(signals or SIGNALS)
        except InvalidArgumentError as e:
            raise TypeError(str(e)) from None
        self.deferrable = deferrable

    def _check(self) -> dict[str, Any]:
        try:
            result = _check(PaimonHook(self.conn_id), self.table, self.signals)
        except Exception as e:  # noqa: BLE001 - the engine's words, one line, no retry
            raise AirflowFailException(" ".join(f"{type(e).__name__}: {e}".split())) from None
        self.log.info("%s", result["summary"])
        return result

    def poke(self, context: Any) -> PokeReturnValue:
        result = self._check()
        return PokeReturnValue(is_done=result["status"] == "due", xcom_value=result)

    def execute(self, context: Any) -> Any:
        if not self.deferrable:
            return super().execute(context)
        result = self._check()
        if result["status"] == "due":
            return result
        self.defer(trigger=PaimonTableHealthTrigger(table=self.table, conn_id=self.conn_id, signals=self.signals,
                                                    poll_interval=float(self.poke_interval)),
                   method_name="execute_complete", timeout=_dt.timedelta(seconds=float(self.timeout)))

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> dict[str, Any]:
        if not event or event.get("status") == "error":
            raise AirflowFailException(f"{self.table}: {(event or {}).get('message', 'the trigger sent no event')}")
        self.log.info("%s", event.get("summary", event))
        return event


__all__ = ["PaimonTableHealthSensor"]
