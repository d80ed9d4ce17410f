# The in-cluster cost collector: `gpu-finops collect` as a non-root process.
# Built by the nightly workflow and pushed to the ECR repository the cluster stack creates
# (<account>.dkr.ecr.<region>.amazonaws.com/<cluster>/collector:<versions.collector_image_tag>).
FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
# The collector's floors only: the entry point, finops, the clients under it and the ground floor
# (lint-imports keeps finops from importing anything else; tests/finops/test_collector.py checks this list
# against what it imports).
COPY gpu_finops gpu_finops
COPY finops finops
COPY clients clients
COPY facts facts
# Only what `collect` imports (the CLI loads subcommands lazily): not the CDK Terrain providers.
RUN pip install --no-cache-dir --prefix=/install --no-deps . \
 && pip install --no-cache-dir --prefix=/install "boto3>=1.40,<2" "kubernetes>=33,<38" "tenacity>=9,<10" \
      "rich>=13.7,<16" "prometheus-client>=0.21,<1" "PyYAML>=6,<7"

FROM python:3.12-slim
COPY --from=build /install /usr/local
USER 10001
EXPOSE 9464
ENTRYPOINT ["gpu-finops"]
CMD ["collect", "--port", "9464"]
