"""The shapes of the files the report reads, as their writers write them: the acts' JSON
(acts/report.py), a ledger month and the ladder (`gpu-finops ledger month|ladder --json`,
gpu_finops/ledger/render.py) and the diagnosis (`gpu-finops diagnose --all --json`,
gpu_finops/diagnose/cli_diagnose.py). Each writer's real output is validated against its schema by the
tests, so the two cannot drift; a file someone edited or cut short is refused naming the place inside it
(gpu_finops/facts/file_schema.py)."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from gpu_finops.diagnose.model import ORDER
from gpu_finops.facts import timestamps
from gpu_finops.facts.file_schema import (
    Amount,
    AwareTime,
    Count,
    EpochSeconds,
    FileModel,
    Flag,
    Label,
    Number,
    PathText,
    Text,
)
from gpu_finops.ledger.render import RUNG_LABELS


def _ordered(start: str, end: str) -> None:
    if timestamps.parse(start) >= timestamps.parse(end):
        raise ValueError(f"start {start} before end {end}")


def _percent(text: str) -> str:
    if not (Decimal(0) <= Decimal(text) <= Decimal(100)):
        raise ValueError("a share from 0 to 100")
    return text


class ClauseFailureEntry(FileModel):
    clause: Text
    expected: Text
    observed: Text


class VerdictEntry(FileModel):
    claim: Text
    holds: Flag
    expected: Text
    observed: Text
    evidence: dict[str, Any]
    failed_clauses: list[ClauseFailureEntry]


class ActEntry(FileModel):
    act: Label
    outcome: Literal["passed", "failed", "skipped", "not run"]
    claim: Text
    verdict: VerdictEntry | None
    timings: dict[Label, Seconds | None]
    message: Text
    evidence: PathText | None
    phases: list[tuple[Label, EpochSeconds, EpochSeconds]]
    lifecycles: list[tuple[Label, EpochSeconds, EpochSeconds | None]]


class ActsReportFile(FileModel):
    target: Label
    finished: AwareTime
    acts: list[ActEntry]


class LedgerLineEntry(FileModel):
    line: Text
    label: Text
    owner: Text
    gpu_hours: Amount
    gpu_hours_shown: Count
    share_percent: Percent


class LedgerMonthFile(FileModel):
    start: AwareTime
    end: AwareTime
    step_seconds: Positive
    installed_gpu_hours: Amount
    installed_gpu_hours_shown: Count
    observed_samples: Count
    expected_samples: Count
    lines: list[LedgerLineEntry]
    warnings: list[Text]

    @model_validator(mode="after")
    def _a_window(self) -> LedgerMonthFile:
        _ordered(self.start, self.end)
        if self.observed_samples > self.expected_samples:
            raise ValueError(
                f"observed_samples {self.observed_samples} at most expected_samples {self.expected_samples}"
            )
        return self


Seconds = Number  # a timing: between two clocks' readings it may be a little below zero (skew)
Positive = Annotated[Count, Field(gt=0)]
Percent = Annotated[Amount, AfterValidator(_percent)]
Check = Literal[tuple(ORDER)]  # type: ignore[valid-type]
Rung = Literal[tuple(RUNG_LABELS)]  # type: ignore[valid-type]


class RungEntry(FileModel):
    rung: Rung
    now: Amount | None
    mean_gpus: Amount
    gpu_hours: Amount


class TrendEntry(FileModel):
    points: Count
    first: Number | None = None
    last: Number | None = None
    min: Number | None = None
    max: Number | None = None
    per_day: Number | None = None


class LadderFile(FileModel):
    start: AwareTime
    end: AwareTime
    rungs: list[RungEntry]
    largest_placeable: Amount | None
    largest_placeable_trend: TrendEntry
    warnings: list[Text]

    @model_validator(mode="after")
    def _a_window(self) -> LadderFile:
        _ordered(self.start, self.end)
        return self


class FindingEntry(FileModel):
    check: Check
    explains: Flag | None
    summary: Text
    next_action: Text
    evidence: dict[str, Any]
    key_evidence: list[Text]


class DiagnosisEntry(FileModel):
    target: Label
    kind: Literal["pod", "workload"]
    first_cause: Check | None
    also_explains: list[Text]
    not_checked: list[Text]
    order: list[Text]
    findings: list[FindingEntry]


class DiagnosisFile(FileModel):
    order: list[Text]
    window_s: Annotated[Number, Field(gt=0)]
    dcgm: Text
    diagnoses: list[DiagnosisEntry]
