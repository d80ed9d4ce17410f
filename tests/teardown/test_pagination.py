"""SQS ListQueues returns at most 1,000 URLs and no NextToken
unless MaxResults is given, so in an account with 1,000 other queues ours was never listed: destroy left
it and verify said empty. Every list call that pages now gives its page size."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from gpu_finops.cli import main
from teardown.registry import REGISTRY
from teardown.types import load
from tests.teardown.account import in_state
from tests.teardown.test_provenance import cli

TAGS = {"gpu-finops.io/project": "gpu-finops", "gpu-finops.io/cluster": "gpu-finops"}


def test_our_queue_behind_1000_others_is_deleted_and_verify_is_honest(boto_session, capsys):
    sqs = boto_session.client("sqs")
    for i in range(1000):  # other teams' queues, sorted before ours
        sqs.create_queue(QueueName=f"a-other-team-{i:04d}")
    url = sqs.create_queue(QueueName="gpu-finops-interruption", tags=TAGS)["QueueUrl"]
    in_state("sqs_queue", url)
    assert main(cli("destroy")) == 0, capsys.readouterr().out
    doc = json.loads(Path("destroy.json").read_text()) if Path("destroy.json").exists() else {}
    assert sqs.list_queues(QueueNamePrefix="gpu-finops").get("QueueUrls", []) == [], doc
    assert len(sqs.list_queues(MaxResults=1000)["QueueUrls"]) == 1000  # theirs untouched
    # and verify lists our queue while it exists: 1,000 others do not hide it
    url = sqs.create_queue(QueueName="gpu-finops-interruption", tags=TAGS)["QueueUrl"]
    in_state("sqs_queue", url)
    assert main(cli("verify")) == 1
    assert "sqs_queue" in capsys.readouterr().out


def test_each_row_whose_listing_pages_only_on_request_asks_for_pages():
    """Where a page size is what makes the API page (SQS) or is capped (EventBridge, FIS), it is given."""
    load()
    want = {"sqs_queue": "MaxResults", "eventbridge_rule": "Limit", "fis_template": "maxResults"}
    for name, key in want.items():
        kwargs = REGISTRY[name].row.list_kwargs
        given = (
            kwargs(SimpleNamespace(config=SimpleNamespace(cluster_name="x"))) if callable(kwargs) else kwargs
        )
        assert key in given, name
