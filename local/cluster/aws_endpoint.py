"""The local target's AWS endpoint: a moto server with the interruption queue Karpenter reads (moved from
cluster.py)."""

from __future__ import annotations

import sys

from local.cluster.processes import AWS_CREDENTIALS, PORTS, Processes


class AwsEndpoint(Processes):
    @property
    def aws_endpoint(self) -> str:
        return f"http://127.0.0.1:{PORTS['moto']}"

    @property
    def aws_env(self) -> dict[str, str]:
        """What a boto3 or AWS SDK client needs to reach the local AWS endpoint (and nothing real)."""
        return {
            "AWS_ENDPOINT_URL": self.aws_endpoint,
            "AWS_REGION": self.config.region,  # type: ignore[union-attr]
            "AWS_DEFAULT_REGION": self.config.region,  # type: ignore[union-attr]
            **AWS_CREDENTIALS,
        }

    @property
    def interruption_queue(self) -> str:
        return self.config.interruption_queue  # type: ignore[union-attr]

    def start_aws(self) -> None:
        """A moto server with the interruption queue, shaped as the cluster stack makes it (SSE, 300 s)."""
        self.sup.start(
            "moto",
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(PORTS["moto"])],
        )
        self._wait("moto", f"{self.aws_endpoint}/moto-api/data.json", ok="{", tls=False)
        import boto3

        sqs = boto3.client(
            "sqs",
            endpoint_url=self.aws_endpoint,
            region_name=self.config.region,  # type: ignore[union-attr]
            aws_access_key_id=AWS_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=AWS_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=AWS_CREDENTIALS["AWS_SESSION_TOKEN"],
        )
        sqs.create_queue(
            QueueName=self.interruption_queue,
            Attributes={"MessageRetentionPeriod": "300", "SqsManagedSseEnabled": "true"},
        )
