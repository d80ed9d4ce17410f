"""The shapes of the files the report reads, as their writers write them: the acts' JSON
(acts/report.py), a ledger month and the ladder (`gpu-finops ledger month|ladder --json`,
gpu_finops/ledger/render.py) and the diagnosis (`gpu-finops diagnose --all --json`,
gpu_finops/diagnose/cli_diagnose.py). Each writer's real output is validated against its schema by the
tests, so the two cannot drift; a file someone edited or cut short is refused naming the place inside it
(gpu_finops/facts/file_schema.py)."""

from __future__ import annotations

from typing import Any, Literal

from gpu_finops.facts.file_schema import Amount, Count, EpochSeconds, FileModel, Flag, Number, PathText, Text
from gpu_finops.ledger.render import RUNG_LABELS


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
    act: Text
    outcome: Literal["passed", "failed", "skipped", "not run"]
    claim: Text
    verdict: VerdictEntry | None
    timings: dict[str, Number | None]
    message: Text
    evidence: PathText | None
    phases: list[tuple[Text, EpochSeconds, EpochSeconds]]
    lifecycles: list[tuple[Text, EpochSeconds, EpochSeconds | None]]


class ActsReportFile(FileModel):
    target: Text
    finished: Text
    acts: list[ActEntry]


class LedgerLineEntry(FileModel):
    line: Text
    label: Text
    owner: Text
    gpu_hours: Amount
    gpu_hours_shown: Count
    share_percent: Amount


class LedgerMonthFile(FileModel):
    start: Text
    end: Text
    step_seconds: Count
    installed_gpu_hours: Amount
    installed_gpu_hours_shown: Count
    observed_samples: Count
    expected_samples: Count
    lines: list[LedgerLineEntry]
    warnings: list[Text]


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
    start: Text
    end: Text
    rungs: list[RungEntry]
    largest_placeable: Amount | None
    largest_placeable_trend: TrendEntry
    warnings: list[Text]


class FindingEntry(FileModel):
    check: Text
    explains: Flag | None
    summary: Text
    next_action: Text
    evidence: dict[str, Any]
    key_evidence: list[Text]


class DiagnosisEntry(FileModel):
    target: Text
    kind: Literal["pod", "workload"]
    first_cause: Text | None
    also_explains: list[Text]
    not_checked: list[Text]
    order: list[Text]
    findings: list[FindingEntry]


class DiagnosisFile(FileModel):
    order: list[Text]
    window_s: Number
    dcgm: Text
    diagnoses: list[DiagnosisEntry]
