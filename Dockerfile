# The in-cluster cost collector: `gpu-finops collect` as a non-root process.
# Built by the nightly workflow and pushed to the ECR repository the cluster stack creates
# (<account>.dkr.ecr.<region>.amazonaws.com/<cluster>/collector:<versions.collector_image_tag>); the
# gpu-finops chart (charts/gpu-finops) runs it with a read-only root filesystem.
FROM python:3.12-slim AS build
WORKDIR /src
# The product's dependencies from the lock (`make lock`: requirements/runtime.txt, hash-pinned, no CDK
# Terrain, jsii or pytest), never a second hand-written list of ranges.
COPY requirements/runtime.txt requirements/runtime.txt
RUN pip install --no-cache-dir --prefix=/install --require-hashes --no-deps -r requirements/runtime.txt
COPY pyproject.toml README.md ./
# The product package: the collector (gpu_finops.cost over gpu_finops.clients and gpu_finops.facts;
# lint-imports keeps the cost room from importing anything else) and the chart's diagnosis exporter
# (`diagnose --all --port`, gpu_finops.diagnose), which runs this same image.
# tests/gpu_finops/cost/test_collector.py checks that what they import is in the image.
COPY gpu_finops gpu_finops
RUN pip install --no-cache-dir --prefix=/install --no-deps .

FROM python:3.12-slim
COPY --from=build /install /usr/local
USER 10001
EXPOSE 9464
ENTRYPOINT ["gpu-finops"]
CMD ["collect", "--port", "9464"]
