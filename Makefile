# gpu-finops — every target that needs the virtualenv depends on `setup`, so a fresh clone needs nothing else.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON     ?= python3
VENV       := .venv
NODE_DIR   := .node
TOOLS_DIR  := .tools
# Slow-to-fetch things are cached outside the clone, so CI on a warm machine reuses them.
CACHE_DIR  ?= $(HOME)/.cache/gpu-finops
# renovate: datasource=node-version depName=node versioning=node
NODE_MAJOR := 22
# renovate: datasource=pypi depName=checkov
CHECKOV_VERSION := 3.3.30
# The FOCUS project's validator, in its own tool venv. 2.x requires Python >= 3.12 (so pip on 3.11 offers only
# 1.0.0) and checks FOCUS 1.2; it pins numpy<2 and leaves pyarrow open (pyarrow 22+ needs numpy 2), so pyarrow
# is pinned beside it. numpy 1.26 has no wheel for 3.13, so it is installed with a Python 3.12 found on the
# machine (PATH, then pyenv's versioned paths; a pyenv shim that refuses counts as absent).
# renovate: datasource=pypi depName=focus-validator
FOCUS_VALIDATOR_VERSION := 2.2.1
# Where no Python 3.12 runs: 1.0.0 (FOCUS 1.0 rules; pandera 0.17 needs multimethod<1.11). This is the newest
# release whose Requires-Python admits 3.11: decline a Renovate bump of this one past 1.x.
# renovate: datasource=pypi depName=focus-validator
FOCUS_VALIDATOR_FALLBACK_VERSION := 1.0.0
FOCUS_VALIDATOR_PYTHON ?= $(shell for p in python3.12 $(HOME)/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do \
  "$$p" -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1 && { echo "$$p"; break; }; done)
# renovate: datasource=github-releases depName=rhysd/actionlint extractVersion=^v(?<version>.+)$
ACTIONLINT_VERSION := 1.7.12
# uv compiles the hash-pinned lock files (`make lock`); renovate-config-validator checks renovate.json.
# renovate: datasource=pypi depName=uv
UV_VERSION := 0.13.8
# renovate: datasource=npm depName=renovate
RENOVATE_VERSION := 44.121.2
# axe-core checks the HTML report's accessibility in the browser tests (tests/gpu_finops/report).
# renovate: datasource=npm depName=axe-core
AXE_CORE_VERSION := 4.14.1
TARGET     ?= local

export PIP_CACHE_DIR     ?= $(CACHE_DIR)/pip
export npm_config_cache  ?= $(CACHE_DIR)/npm
# A jsii-supported Node.js (22.x, project-local) comes first on PATH for everything that synthesizes.
export PATH := $(CURDIR)/$(NODE_DIR)/node_modules/.bin:$(CURDIR)/$(VENV)/bin:$(PATH)
export TARGET

SETUP_STAMP := $(VENV)/.setup-done
NODE_BIN    := $(NODE_DIR)/node_modules/.bin/node
CHECKOV     := $(TOOLS_DIR)/checkov/bin/checkov
FOCUS_VALIDATOR := $(TOOLS_DIR)/focus-validator/bin/focus-validator
FOCUS_VALIDATOR_STAMP := $(TOOLS_DIR)/focus-validator/.installed-$(FOCUS_VALIDATOR_VERSION)
# actionlint comes from the Go module proxy, built once into the cache outside the clone.
ACTIONLINT  := $(CACHE_DIR)/tools/actionlint-v$(ACTIONLINT_VERSION)/actionlint
UV          := $(CACHE_DIR)/tools/uv-$(UV_VERSION)/bin/uv
UV_PIP      := UV_CACHE_DIR=$(CACHE_DIR)/uv $(UV) pip
RENOVATE_VALIDATOR := $(CACHE_DIR)/tools/renovate-$(RENOVATE_VERSION)/node_modules/.bin/renovate-config-validator
AXE_CORE_DIR := $(CACHE_DIR)/tools/axe-core-$(AXE_CORE_VERSION)
AXE_CORE     := $(AXE_CORE_DIR)/node_modules/axe-core/axe.min.js
# The Python dependencies, resolved once with hashes (make lock): what setup, CI and the nightly install.
LOCK_TEST    := requirements/test.txt
LOCK_RUNTIME := requirements/runtime.txt
LOCK_FLAGS   := --generate-hashes --universal --python-version 3.11 --quiet

.PHONY: help setup test mutation lint lock synth up destroy bench bench-fleet clean local-up local-down acts demo prebuild report outdated validate-charts twin-test

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(NODE_BIN):
	@mkdir -p $(NODE_DIR)
	@echo "installing Node.js $(NODE_MAJOR).x into $(NODE_DIR)/ (jsii no longer supports the system Node 20)"
	@npm install --prefix $(NODE_DIR) --no-audit --no-fund --loglevel=error node@$(NODE_MAJOR) >/dev/null
	@test "$$($(NODE_BIN) --version | cut -d. -f1)" = "v$(NODE_MAJOR)" || { echo "expected Node $(NODE_MAJOR).x in $(NODE_DIR), got $$($(NODE_BIN) --version)"; exit 1; }

$(CHECKOV): | $(UV)
	@echo "installing checkov $(CHECKOV_VERSION) into its own tool venv ($(TOOLS_DIR)/checkov)"
	@$(PYTHON) -m venv $(TOOLS_DIR)/checkov
	@$(UV_PIP) install --python $(TOOLS_DIR)/checkov/bin/python --quiet "checkov==$(CHECKOV_VERSION)" \
	  || $(TOOLS_DIR)/checkov/bin/pip install -q "checkov==$(CHECKOV_VERSION)"

# The stamp names the version, so a checkout holding an older validator reinstalls on the next `make setup`.
$(FOCUS_VALIDATOR_STAMP): | $(UV)
	@rm -rf $(TOOLS_DIR)/focus-validator
	@if [ -n "$(FOCUS_VALIDATOR_PYTHON)" ]; then \
	  echo "installing focus-validator $(FOCUS_VALIDATOR_VERSION) with $(FOCUS_VALIDATOR_PYTHON) into its own tool venv ($(TOOLS_DIR)/focus-validator)"; \
	  $(FOCUS_VALIDATOR_PYTHON) -m venv $(TOOLS_DIR)/focus-validator; \
	  $(UV_PIP) install --python $(TOOLS_DIR)/focus-validator/bin/python --quiet "focus-validator==$(FOCUS_VALIDATOR_VERSION)" "pyarrow>=17,<22" \
	    || $(TOOLS_DIR)/focus-validator/bin/pip install -q "focus-validator==$(FOCUS_VALIDATOR_VERSION)" "pyarrow>=17,<22"; \
	else \
	  echo "NOTE: no Python 3.12 runs here (PATH, ~/.pyenv/versions): installing focus-validator $(FOCUS_VALIDATOR_FALLBACK_VERSION) (FOCUS 1.0 rules) instead of $(FOCUS_VALIDATOR_VERSION) (FOCUS 1.2); install Python 3.12, then rm -rf $(TOOLS_DIR)/focus-validator and rerun make setup"; \
	  $(PYTHON) -m venv $(TOOLS_DIR)/focus-validator; \
	  $(UV_PIP) install --python $(TOOLS_DIR)/focus-validator/bin/python --quiet "focus-validator==$(FOCUS_VALIDATOR_FALLBACK_VERSION)" "pyarrow>=17,<22" "multimethod<1.11" \
	    || $(TOOLS_DIR)/focus-validator/bin/pip install -q "focus-validator==$(FOCUS_VALIDATOR_FALLBACK_VERSION)" "pyarrow>=17,<22" "multimethod<1.11"; \
	fi
	@touch $@

$(ACTIONLINT):
	@command -v go >/dev/null || { echo "actionlint is built from the Go module proxy: install Go (>= 1.21; with GOTOOLCHAIN=local, >= 1.25, actionlint's go.mod) first"; exit 1; }
	@echo "building actionlint v$(ACTIONLINT_VERSION) from the Go module proxy into $(dir $@)"
	@GOBIN=$(abspath $(dir $@)) GOFLAGS=-mod=mod go install github.com/rhysd/actionlint/cmd/actionlint@v$(ACTIONLINT_VERSION)

$(UV):
	@echo "installing uv $(UV_VERSION) into $(dir $@) (it compiles the lock files and installs them)"
	@$(PYTHON) -m venv $(CACHE_DIR)/tools/uv-$(UV_VERSION)
	@$(CACHE_DIR)/tools/uv-$(UV_VERSION)/bin/pip install -q "uv==$(UV_VERSION)"

$(RENOVATE_VALIDATOR): | $(NODE_BIN)  # order-only: a fresh clone's new .node/ must not make the cached tools stale
	@echo "installing renovate $(RENOVATE_VERSION) (for renovate-config-validator) into $(CACHE_DIR)/tools/renovate-$(RENOVATE_VERSION)"
	@mkdir -p $(CACHE_DIR)/tools/renovate-$(RENOVATE_VERSION)
	@PATH=$(CURDIR)/$(NODE_DIR)/node_modules/.bin:$$PATH npm install --prefix $(CACHE_DIR)/tools/renovate-$(RENOVATE_VERSION) --no-audit --no-fund --loglevel=error "renovate@$(RENOVATE_VERSION)" >/dev/null

print-renovate-validator: # where renovate-config-validator lives (tests/ci runs it)
	@echo $(RENOVATE_VALIDATOR)

$(AXE_CORE): | $(NODE_BIN)
	@echo "installing axe-core $(AXE_CORE_VERSION) (the report's accessibility check) into $(AXE_CORE_DIR)"
	@mkdir -p $(AXE_CORE_DIR)
	@PATH=$(CURDIR)/$(NODE_DIR)/node_modules/.bin:$$PATH npm install --prefix $(AXE_CORE_DIR) --no-audit --no-fund --loglevel=error "axe-core@$(AXE_CORE_VERSION)" >/dev/null

print-axe-core: # the folder axe-core is installed in (tests/gpu_finops/report injects its axe.min.js)
	@echo $(AXE_CORE_DIR)

lock: $(UV) ## re-resolve the Python dependencies into the hash-pinned lock files (after editing pyproject.toml)
	$(UV) pip compile pyproject.toml --extra test $(LOCK_FLAGS) -o $(LOCK_TEST)
	$(UV) pip compile pyproject.toml $(LOCK_FLAGS) -o $(LOCK_RUNTIME)

# uv installs the lock (about 5 s cold, 1-2 s from its cache, against pip's 2.5 min here: docs/local.md); its
# cache lives outside the clone. Where uv cannot run or reach the index, pip installs the same lock.
$(SETUP_STAMP): pyproject.toml Makefile $(LOCK_TEST) | $(UV)
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@echo "installing the locked dependencies ($(LOCK_TEST), hashes required), then gpu-finops, into $(VENV)/"
	@# the lock is complete; --no-deps keeps the installer from re-resolving extras (urllib3[socks]) that hash mode refuses
	@$(UV_PIP) install --python $(VENV)/bin/python --quiet --require-hashes --no-deps -r $(LOCK_TEST) \
	  || { echo "uv could not install $(LOCK_TEST) (above); installing it with pip instead"; \
	       $(VENV)/bin/pip install -q --require-hashes --no-deps -r $(LOCK_TEST); }
	@$(VENV)/bin/pip check >/dev/null || { $(VENV)/bin/pip check; exit 1; }
	@$(UV_PIP) install --python $(VENV)/bin/python --quiet --no-deps -e . || $(VENV)/bin/pip install -q --no-deps -e .
	@# The harness (infra/, acts/, local/, twin/, ...) is not installed: this venv finds it in the checkout, through a
	@# .pth naming the checkout, so no generic top-level name (infra, local, report) lands in site-packages.
	@$(VENV)/bin/python -c 'import pathlib, sys, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "gpu_finops_harness.pth").write_text(sys.argv[1] + "\n")' "$(CURDIR)"
	@# command:package; chromium and chromium-driver drive the report's browser tests (tests/gpu_finops/report); apt waits up to
	@# 10 min for another apt's lock (two checkouts set up at once) instead of failing at once
	@missing=""; for pair in prometheus:prometheus shellcheck:shellcheck chromium:chromium chromedriver:chromium-driver; do \
	  command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair#*:}"; done; \
	if [ -n "$$missing" ]; then echo "installing from Debian:$$missing"; \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq \
	    && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq $$missing >/dev/null; fi
	@touch $@

setup: $(SETUP_STAMP) $(NODE_BIN) $(CHECKOV) $(FOCUS_VALIDATOR_STAMP) ## create .venv, install the project, Node.js 22, checkov, focus-validator, prometheus, shellcheck, chromium

print-actionlint: # where the actionlint binary lives (tests/ci runs it)
	@echo $(ACTIONLINT)

# Two workers (pytest-xdist): the tests that touch the local target run in order on one, as one group (its
# ports are fixed); every other module goes to whichever worker is free (conftest.py). TEST_WORKERS=0 runs
# everything in one process. The Go builds start first, in the background, as for `demo`.
TEST_WORKERS ?= 2
test: prebuild setup $(ACTIONLINT) $(RENOVATE_VALIDATOR) $(AXE_CORE) ## run the offline test suite (the CI command)
	$(VENV)/bin/pytest --target=$(TARGET) -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

# Each mutant runs only the tests that reached its function in mutmut's stats run. MUTANTS='assertions.preemption*'
# runs one module; MUTMUT_CHILDREN: parallel mutants (2 suits a shared machine). It resumes from mutants/.
MUTMUT_CHILDREN ?= 2
mutation: setup ## mutation testing of the claim checkers (assertions/) against tests/assertions: minutes, so not in `test`
	$(VENV)/bin/pip install -q -e '.[mutation]'
	nice -n 10 $(VENV)/bin/mutmut run --max-children $(MUTMUT_CHILDREN) $(MUTANTS) || true  # survivors are listed next, and judged in docs/claims.md
	$(VENV)/bin/mutmut results

lint: setup $(ACTIONLINT) $(RENOVATE_VALIDATOR) ## ruff, the import floors (lint-imports), actionlint (with shellcheck) and zizmor over the workflows, renovate-config-validator
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	@command -v shellcheck >/dev/null || echo "note: shellcheck is not installed, so actionlint skips the run: scripts (apt-get install shellcheck)"
	$(ACTIONLINT) -no-color
	$(VENV)/bin/zizmor --offline --persona auditor --no-progress .github/workflows
	$(RENOVATE_VALIDATOR) --strict  # ./renovate.json, as repository config
	-$(VENV)/bin/python -m tools.outdated  # a report, never a failure (the leading - keeps lint's verdict its own)

outdated: setup ## what is newer than each pin Renovate covers, asked of PyPI, the Go proxy and npm (a report)
	$(VENV)/bin/python -m tools.outdated $(OUTDATED_ARGS)

synth: setup ## write the Terraform JSON of the network, cluster and addons stacks to cdktf.out/
	$(VENV)/bin/gpu-finops infra synth

validate-charts: setup ## render every release and dry-run it on a real API server (builds that server once: cached)
	$(VENV)/bin/gpu-finops local validate-charts

up: setup ## validate the releases on a real API server, preflight, then apply network -> cluster -> addons
	$(VENV)/bin/gpu-finops local validate-charts
	$(VENV)/bin/gpu-finops teardown begin # the run record: what this run creates is provably ours
	$(VENV)/bin/gpu-finops infra up

destroy: setup ## NodePools first, then addons -> cluster -> network, then verify the account is empty
	$(VENV)/bin/gpu-finops infra destroy
	$(VENV)/bin/gpu-finops teardown destroy $(TEARDOWN_ARGS)

bench: setup ## benchmarks (figures and ratios, never pass/fail): synth, collector, teardown verify, ledger, the Go builds; at fleet size on the local target: `make bench-fleet`
	$(VENV)/bin/python -m benchmarks
	$(VENV)/bin/python -m benchmarks build

# The fleet-size figures of docs/benchmarks.md on the local target, brought up fresh for each part
# (the day and the admission burst; then Karpenter's scale-out from zero). About 90 min at the default 1,250
# nodes (10,000 GPUs); a quick pass: FLEET_NODES=16 FLEET_DAY=1 FLEET_BURST=100. It uses the target's fixed
# ports: alone on a machine, or under `flock /tmp/gpu-finops-local.lock make bench-fleet`.
FLEET_NODES ?= 1250
FLEET_DAY   ?= 24
FLEET_BURST ?= 1000
bench-fleet: setup ## the fleet twin at 10,000 GPUs on the local target: the compressed day, admission, Karpenter's scale-out (figures, ~90 min)
	@g=$(VENV)/bin/gpu-finops; p=$(VENV)/bin/python; trap '$$g local down >/dev/null' EXIT; set -e; \
	$$g local down >/dev/null; $$g local up; \
	$$p -m benchmarks twin --nodes $(FLEET_NODES) --day $(FLEET_DAY) --compression 60 --burst $(FLEET_BURST); \
	$$g local down >/dev/null; $$g local up; \
	$$p -m benchmarks scaleout --pods $(FLEET_NODES) --hold 3600

twin-test: setup ## the fleet twin's live tests at full size: the 64-node whole path beside M/M/16 and borrowing (13 min; `make test` runs those two)
	GPU_FINOPS_TWIN_LIVE=1 $(VENV)/bin/pytest tests/local/test_twin_on_local.py --target=local

local-up: setup ## build (cached) and start the local rehearsal cluster
	$(VENV)/bin/gpu-finops local up

local-down: setup ## stop every process the local target started
	$(VENV)/bin/gpu-finops local down

acts: setup ## run the acts (nine) against TARGET (aws|local); reports in reports/
	@mkdir -p reports
	$(VENV)/bin/pytest acts --target=$(TARGET) -p no:cacheprovider -rs --tb=short --junitxml=reports/acts.junit.xml

# The acts run under local/ledger_window.py, which records the ledger of their window (reports/ledger-*.json)
# for the report; plain `make`, not $(MAKE), so that `make -n demo` does not start it.
# The local target's Go builds need only python3 and go, so `demo` starts them in the background before setup
# installs Python; `local up` waits for them on the build lock (local/build/binaries.py: build_all). Helm goes
# first (a few minutes: the chart and install tests need it from the suite's first minutes; they wait on its
# lock, local/charts/helm.py), then the local target's binaries, then OpenTofu and its providers, one link at
# a time (local/build/terraform.py); the Terraform tests wait on their lock.
prebuild:
	@mkdir -p "$${GPU_FINOPS_CACHE:-$$HOME/.cache/gpu-finops}/local"
	@echo "building helm, the local target's Go binaries, then OpenTofu and its providers, in the background (log: $${GPU_FINOPS_CACHE:-$$HOME/.cache/gpu-finops}/local/prebuild.log)"
	@nohup nice -n 5 sh -c '$(PYTHON) -u -m local.charts.helm; $(PYTHON) -u -m local.build.binaries; $(PYTHON) -u -m local.build.terraform' > "$${GPU_FINOPS_CACHE:-$$HOME/.cache/gpu-finops}/local/prebuild.log" 2>&1 &

demo: prebuild setup ## the main job on the local target: up, all acts (a skipped act fails the demo) and their ledger, down, the report
	$(VENV)/bin/gpu-finops local up
	$(VENV)/bin/python -m local.ledger_window --out reports -- make acts TARGET=local GPU_FINOPS_REQUIRE_ALL_ACTS=1 \
	  || { $(VENV)/bin/gpu-finops local down; $(VENV)/bin/gpu-finops report --out reports/index.html; exit 1; }
	$(VENV)/bin/gpu-finops local down
	$(VENV)/bin/gpu-finops report --out reports/index.html  # its last line: the page's path

report: setup ## the HTML report of the last run (reports/index.html) from what it recorded in reports/
	$(VENV)/bin/gpu-finops report --out reports/index.html

clean: ## remove build outputs (keeps .venv and .node)
	rm -rf cdktf.out reports .pytest_cache

# --- teardown (AWS; boto3 honours AWS_ENDPOINT_URL) ------------------------------------------------------
TEARDOWN_ARGS ?=

.PHONY: teardown-plan verify resume
teardown-plan: setup ## show what teardown would delete (dry run)
	$(VENV)/bin/gpu-finops teardown plan $(TEARDOWN_ARGS)

verify: setup ## verify the account holds nothing of ours (exit 1 with a table if it does)
	$(VENV)/bin/gpu-finops teardown verify $(TEARDOWN_ARGS)

resume: setup ## finish a teardown that died partway, from the journal and the account itself
	$(VENV)/bin/gpu-finops teardown resume $(TEARDOWN_ARGS)
