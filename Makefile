# The policy module is the only thing built for wasm32-wasip1; everything else
# (tests, the waPC host) is native.
TARGET := wasm32-wasip1
# .cargo/config.toml sets the module's target features (simd128): a change
# to it is a change to the module.
SOURCES := $(shell find src core/src -name '*.rs') core/Cargo.toml Cargo.toml Cargo.lock .cargo/config.toml
MODULE := target/$(TARGET)/release/annotations_policy.wasm
# The runner `make run` builds: Cargo.toml's `quick` profile, quick to build.
QUICK_RUNNER := target/quick/policy-runner
SAMPLE_SETTINGS := {"criteria":"containsAllOf","values":["owner","cost-center"]}

.PHONY: all
all: policy.wasm

policy.wasm: $(SOURCES)
	@rustup target list --installed | grep -qx $(TARGET) || rustup target add $(TARGET)
	cargo build --target $(TARGET) --release -p annotations-policy
	cp $(MODULE) policy.wasm

# A module that accepts every request unread (bench/noop): what the load
# scenario of the cluster tests (`cluster/run --load`) measures the policy
# against.
noop.wasm: bench/noop/src/lib.rs bench/noop/Cargo.toml Cargo.lock .cargo/config.toml
	@rustup target list --installed | grep -qx $(TARGET) || rustup target add $(TARGET)
	cargo build --target $(TARGET) --release -p noop-policy
	cp target/$(TARGET)/release/noop_policy.wasm noop.wasm

annotated-policy.wasm: policy.wasm metadata.yml README.md
	kwctl annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm

.PHONY: runner
runner:
	cargo build -p policy-host --bin policy-runner

# Build the module and evaluate a sample request with it, as `kwctl run` would.
.PHONY: run
run: policy.wasm
	cargo build --profile quick -p policy-host --bin policy-runner
	$(QUICK_RUNNER) run policy.wasm -r test_data/ingress.json --settings-json '$(SAMPLE_SETTINGS)'

# Side-by-side benchmark; compare other builds with
#   make bench BENCH_MODULES="policy.wasm other.wasm" BENCH_ARGS="--rounds 31"
# The host is built optimised (Cargo.toml's bench profile), as policy-server
# is: a debug host inflates the floor that the ratios are measured against.
BENCH_MODULES ?= policy.wasm
BENCH_ARGS ?=
.PHONY: bench
bench: policy.wasm
	cargo run -q --profile bench -p policy-benches --bin policy-bench -- $(BENCH_ARGS) $(BENCH_MODULES)

# `policy-runner check` beside Kyverno's CLI, Gatekeeper's gator and
# conftest on the same inputs (docs/performance.md). scripts/peers installs
# the peers with Go into target/peers/; one that cannot be installed is left
# out. Never part of `make test`. PEER_ARGS: `--runs N`, `--objects N,N`.
PEER_ARGS ?=
.PHONY: bench-peers
bench-peers: policy.wasm
	scripts/peers
	cargo build -q --profile bench -p policy-host --bin policy-runner
	cargo build -q --profile bench -p policy-benches --bin peer-bench
	target/release/peer-bench $(PEER_ARGS)

# A rehearsal of the release binaries (which release.yml builds natively),
# cross-built here with zig into dist/ with SHA256SUMS (Windows as -gnu,
# where the release is -msvc); the aarch64 Linux binary runs under
# qemu-user beside the native one, their output compared (scripts/dist).
.PHONY: dist
dist: policy.wasm
	scripts/dist

# A short run of every fuzz target (FUZZ_SECONDS each), so that they keep
# building and the obvious finds are caught; cargo fuzz needs nightly.
FUZZ_TARGETS := validate settings structured differential patterns manifests manifests_cut manifests_json
FUZZ_SECONDS ?= 30
.PHONY: fuzz
fuzz:
	@if ! rustup toolchain list | grep -q '^nightly'; then \
	  echo "fuzz: skipped, no nightly toolchain here (cargo fuzz needs one)"; exit 0; \
	fi; \
	command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz; \
	./fuzz/seed.sh && cd fuzz && for target in $(FUZZ_TARGETS); do \
	  cargo +nightly fuzz run $$target -- -max_total_time=$(FUZZ_SECONDS) || exit 1; \
	done

# The fuzz crate is a workspace of its own: `--all` does not reach it.
.PHONY: fmt
fmt:
	cargo fmt --all -- --check
	cargo fmt --manifest-path fuzz/Cargo.toml --all -- --check

.PHONY: lint
lint:
	cargo clippy --workspace --all-targets -- -D warnings

# The GitHub workflows, offline: against GitHub's schema, and audited by
# zizmor (unpinned actions, excessive permissions, template injection).
# Then the test file's JSON Schema, against JSON Schema's own, and every
# test file of tests/suites and the one of tests/suites-failing (whose
# expectations are wrong, not its form) against it; none yet is noted, not an error.
# scripts/prerequisites puts both tools in target/ci-tools.
CI_TOOLS := target/ci-tools/bin
TEST_SCHEMA := docs/policy-test.schema.json
.PHONY: workflows
workflows:
	@test -x $(CI_TOOLS)/zizmor -a -x $(CI_TOOLS)/check-jsonschema || \
	  { echo "workflows: run scripts/prerequisites first (it installs check-jsonschema and zizmor)"; exit 1; }
	$(CI_TOOLS)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(CI_TOOLS)/check-jsonschema --builtin-schema vendor.github-actions action.yml
	$(CI_TOOLS)/zizmor --offline --persona pedantic .github/workflows action.yml
	$(CI_TOOLS)/check-jsonschema --check-metaschema $(TEST_SCHEMA)
	@suites=$$(find tests/suites -name policy-test.yaml 2>/dev/null | sort; echo tests/suites-failing/expects-the-wrong-things.yaml); \
	if [ -z "$$suites" ]; then \
	  echo "workflows: no policy-test.yaml under tests/suites to hold to $(TEST_SCHEMA)"; \
	else \
	  echo $(CI_TOOLS)/check-jsonschema --schemafile $(TEST_SCHEMA) $$suites; \
	  $(CI_TOOLS)/check-jsonschema --schemafile $(TEST_SCHEMA) $$suites; \
	fi

# What the suite needs besides Rust (the wasm32-wasip1 target, rustfmt,
# clippy, bats, the workflow checkers), installed where it is missing.
.PHONY: prerequisites
prerequisites:
	@scripts/prerequisites

# The whole suite: its prerequisites first, so that nothing fails late; then
# formatting, lints, the workflows, unit and property tests, the tests that
# run the freshly built policy.wasm, and e2e.bats.
.PHONY: test
test: prerequisites
	@$(MAKE) --no-print-directory fmt lint workflows policy.wasm
	cargo test --workspace
	@# cargo test has just built target/debug/policy-runner with the
	@# workspace's features; `make runner` alone would rebuild wasmtime.
	bats e2e.bats

# A real control plane (Go): see docs/contributing.md, "The cluster tests (Go)".
.PHONY: cluster
cluster:
	cluster/run

# Uses kwctl where it is installed, the project's runner otherwise.
.PHONY: e2e-tests
e2e-tests: policy.wasm runner
	bats e2e.bats

.PHONY: clean
clean:
	cargo clean
	rm -f policy.wasm annotated-policy.wasm noop.wasm
