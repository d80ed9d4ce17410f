"""The trace file: generated and read back line for line, and each bad input refused naming line and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_finops.facts.errors import ConfigError
from twin.generate import TenantLoad, erlang_trace, generate
from twin.trace import FORMAT, dump, load, parse


def test_the_same_seed_gives_the_same_trace(tmp_path: Path) -> None:
    loads = [TenantLoad("team-a", 20), TenantLoad("team-b", 5)]
    a = generate(loads, horizon_s=6 * 3600, compression=60, seed=3)
    b = generate(loads, horizon_s=6 * 3600, compression=60, seed=3)
    assert a == b and a != generate(loads, horizon_s=6 * 3600, compression=60, seed=4)
    assert load(dump(a, tmp_path / "t.jsonl")) == a
    assert {j.gpus for j in a.jobs} <= {1, 2, 4, 8} and {j.kind for j in a.jobs} == {"training", "serving"}
    assert [j.submit_s for j in a.jobs] == sorted(j.submit_s for j in a.jobs)


def test_arrival_rates_follow_the_tenant_loads() -> None:
    t = generate([TenantLoad("a", 100), TenantLoad("b", 10)], horizon_s=24 * 3600, compression=60, seed=1)
    per = {n: sum(1 for j in t.jobs if j.tenant == n) for n in ("a", "b")}
    # Poisson counts: mean 2400 and 240, standard deviations 49 and 15.5; four of them either side
    assert abs(per["a"] - 2400) < 4 * 49 and abs(per["b"] - 240) < 4 * 15.5


def test_the_erlang_trace_is_one_tenant_of_one_gpu_jobs() -> None:
    t = erlang_trace(servers=16, load=0.8, mean_service_s=600, jobs=2000, compression=60, seed=2)
    assert len(t.jobs) == 2000 and {j.gpus for j in t.jobs} == {1} and t.tenants == ("erlang",)
    mean = sum(j.duration_s for j in t.jobs) / 2000
    assert abs(mean - 600) < 4 * 600 / 2000**0.5
    rate = 2000 / t.jobs[-1].submit_s  # arrivals per trace second: 0.8 * 16 / 600
    assert abs(rate - 0.8 * 16 / 600) < 4 * (0.8 * 16 / 600) / 2000**0.5


def test_time_converts_both_ways() -> None:
    t = erlang_trace(servers=2, load=0.5, mean_service_s=60, jobs=3, compression=60, seed=1)
    assert t.wall(3600) == 60 and t.trace_time(60) == 3600


HEAD = {"format": FORMAT, "compression": 60, "horizon_s": 100, "seed": 1, "tenants": ["a"]}
JOB = {"id": "j1", "tenant": "a", "submit_s": 1, "gpus": 2, "duration_s": 10}


@pytest.mark.parametrize(
    ("head", "job", "line", "key", "says"),
    [
        ({**HEAD, "format": "v0"}, JOB, 1, "format", FORMAT),
        ({**HEAD, "compression": 0}, JOB, 1, "compression", "> 0"),
        ({**HEAD, "compression": float("inf")}, JOB, 1, "<file>", "Infinity is not a JSON number"),
        ({**HEAD, "compression": "fast"}, JOB, 1, "compression", "finite"),
        ({**HEAD, "tenants": []}, JOB, 1, "tenants", "list of tenant names"),
        (HEAD, {**JOB, "tenant": "b"}, 2, "tenant", "not in the header's tenants"),
        (HEAD, {**JOB, "gpus": 3}, 2, "gpus", "one of [1, 2, 4, 8]"),
        (HEAD, {**JOB, "gpus": True}, 2, "gpus", "one of"),
        (HEAD, {**JOB, "duration_s": -1}, 2, "duration_s", "> 0"),
        (HEAD, {**JOB, "submit_s": 101}, 2, "submit_s", "past the header's horizon_s"),
        (HEAD, {**JOB, "kind": "batch"}, 2, "kind", "training"),
        (HEAD, {**JOB, "profile": "warp-drive"}, 2, "profile", "training-stepping"),
        (HEAD, {**JOB, "restarts": -1}, 2, "restarts", ">= 0"),
        (HEAD, {**JOB, "colour": "red"}, 2, "colour", "unknown key"),
        (HEAD, {k: v for k, v in JOB.items() if k != "gpus"}, 2, "gpus", "missing"),
    ],
)
def test_a_bad_trace_names_its_line_and_key(head: dict, job: dict, line: int, key: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse([json.dumps(head), json.dumps(job)], "t.jsonl")
    assert err.value.key == key and err.value.source == f"t.jsonl:{line}" and says in err.value.problem


def test_duplicate_ids_and_a_wrong_count_are_refused() -> None:
    with pytest.raises(ConfigError, match="duplicate job id 'j1'"):
        parse([json.dumps(HEAD), json.dumps(JOB), json.dumps(JOB)], "t.jsonl")
    with pytest.raises(ConfigError, match="the header says 2 jobs, the file has 1"):
        parse([json.dumps({**HEAD, "jobs": 2}), json.dumps(JOB)], "t.jsonl")
    with pytest.raises(ConfigError, match="not JSON"):
        parse([json.dumps(HEAD), "{"], "t.jsonl")
    with pytest.raises(ConfigError, match="empty"):
        parse([], "t.jsonl")
