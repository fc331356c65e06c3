# phxgo — see README.md.
GO        ?= go
GOBIN     ?= $(shell $(GO) env GOPATH)/bin
PROTOC_GEN_GO      = google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC = google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
SEEDS     ?= 2000
BASE_PORT ?= 17000

.PHONY: all build test proto lint bench sim cluster cluster-down cluster-status jepsen clean

all: build

# The build's name (binlogd/version): the newest v* tag (v0.0.0 without one),
# the commit and whether the tree had changes. A release: make build VERSION=v0.4.0.
VERSION   ?= $(shell git describe --tags --match 'v[0-9]*' --abbrev=0 2>/dev/null)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED  ?= $(shell git diff --quiet HEAD 2>/dev/null && echo false || echo true)
LDFLAGS   ?= -X phxgo/binlogd/version.Version=$(VERSION) -X phxgo/binlogd/version.Revision=$(REVISION) -X phxgo/binlogd/version.Modified=$(MODIFIED)

build:
	$(GO) build ./...
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...

# The README's test command. Unit tests with -race, then integration tests
# that start real mariadbd processes (scripts/install-mariadb.sh installs them).
# The jepsen package runs whole clusters under faults one after another; it
# runs on its own, without -race (its harness logic is raced in its
# subpackages' tests) and with its own timeout, then the 500-seed Paxos
# simulation. Those two run in the background next to the -race run, not
# after it: the jepsen package spends its ~5 minutes waiting on leases and
# fault holds (about a third of a core), so on CI's 2 cores it hides behind
# the -race run (~11 minutes) instead of adding to it. Their output comes
# after the -race run's; make test fails if either part fails. Each part
# prints its wall time (test-time lines) to compare CI runs.
TEST_BG = t=$$(date +%s); $(GO) test -count=1 -timeout 30m ./jepsen/ 2>&1; j=$$?; \
	$(GO) test -count=1 -timeout 10m ./paxos/ -run '^(TestSim|TestLargeCommandsUnderLoad)' -seeds=500 2>&1; s=$$?; \
	echo "test-time background=$$(($$(date +%s)-t))s (jepsen package, then simulation)" >&2; exit $$((j|s))
test: lint build
	@echo "$(GO) test -count=1 -timeout 30m ./jepsen/, then $(GO) test -count=1 -timeout 10m ./paxos/ -run '^(TestSim|TestLargeCommandsUnderLoad)' -seeds=500 (in the background, printed below)"
	@bg=$$(mktemp); t0=$$(date +%s); \
	( $(TEST_BG) ) >$$bg 2>$$bg.time & bgpid=$$!; \
	echo "$(GO) test -race -count=1 -timeout 15m \$$($(GO) list ./... | grep -v '^phxgo/jepsen\$$')"; \
	$(GO) test -race -count=1 -timeout 15m $$($(GO) list ./... | grep -v '^phxgo/jepsen$$'); r=$$?; \
	echo "test-time race=$$(($$(date +%s)-t0))s"; \
	wait $$bgpid; b=$$?; cat $$bg.time; echo "test-time total=$$(($$(date +%s)-t0))s"; \
	cat $$bg; rm -f $$bg $$bg.time; exit $$((r|b))

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null | grep -v '\.pb\.go$$')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

proto:
	@command -v protoc >/dev/null || { apt-get update -qq && apt-get install -y -qq protobuf-compiler; }
	GOBIN=$(GOBIN) $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(GOBIN) $(GO) install $(PROTOC_GEN_GO_GRPC)
	cd proto && PATH=$(GOBIN):$$PATH protoc -I. --go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative *.proto

# Paxos simulation with many seeds; prints the failing seed so it replays.
sim:
	$(GO) test ./paxos/ -run 'TestSim' -count=1 -timeout 60m -seeds=$(SEEDS) -v 2>&1 | tail -40

bench:
	$(GO) run ./cmd/paxosbench -nodes 3 -clients 64 -seconds 10 -value 256
	$(GO) run ./cmd/paxosbench -nodes 3 -clients 1 -seconds 5 -value 256

# Side-by-side consensus benchmark: paxosbench vs hashicorp/raft and
# embedded etcd (scripts/consensusbaseline), in turns; BENCH_* knobs in the script.
.PHONY: bench-consensus
bench-consensus:
	scripts/bench-consensus.sh

# phxgo against MariaDB semi-sync (master-only semi-sync, durable replicas)
# and HAProxy, measured the same way: every run ends when every replica has
# applied the master's GTID (issue 19). BENCH_QUICK=1 for 5 s runs; the
# other BENCH_* knobs are in scripts/bench.sh. Last line:
# sustained_insert_ratio=... p95_ratio=... binlogd_us_per_txn=... catchup_s=... proxy_vs_haproxy=... rejected_batches=...
.PHONY: bench-sql
bench-sql:
	scripts/bench.sh

# One huge transaction and one big LOAD DATA through phxgo next to plain
# MariaDB semi-sync, with each binlogd's peak RSS (issue 20.4). Knobs
# BENCH_TXN_MB (256), BENCH_LOAD_MB (1024), BENCH_BIN (other binaries, to
# compare builds) in scripts/bench-big.sh. Last line:
# bench_big txn_mb=... phx_commit_s=... base_commit_s=... commit_ratio=... load_ratio=... binlogd_peak_rss_mb=... binlogd_rss_growth_mb=...
.PHONY: bench-big
bench-big:
	scripts/bench-big.sh

# Starts (or restarts, keeping its data) the local 3-node cluster in .cluster/;
# NODES=2 WITNESSES=1: two data nodes and a witness (binlogd only, README "Witnesses");
# LEARNERS=1: one more data node that follows the log and serves reads, never votes.
cluster:
	BASE_PORT=$(BASE_PORT) scripts/cluster.sh up

cluster-down:
	BASE_PORT=$(BASE_PORT) scripts/cluster.sh down

cluster-status:
	BASE_PORT=$(BASE_PORT) scripts/cluster.sh status

jepsen: build
	scripts/jepsen-matrix.sh

# Separate machines (issue 18.6; jepsen/hosts): four hosts as network
# namespaces on a private bridge, set up only the documented way (binlogd
# init, the systemd units' own lines, add-node steps); needs root, cgroup v2
# and MariaDB. Also runs in `make test` as TestHosts (about 2 minutes).
# Last line: hosts_test=pass nodes=4 failover_s=... added=1 removed=1 unsafe=0 lost=0
.PHONY: hosts-test
hosts-test: build
	bin/jepsen -hosts -bin bin

# Failover under load, in parts (issue 20.5; jepsen/failover): 64 insert
# threads through the proxies, SIGKILL of the master's processes, detection /
# election / apply / first write timed by 50 ms Status polls, 3 rounds.
# Last line: failover rounds=3 within_two_leases=... median_total_ms=... lease_ms=...
.PHONY: failover-bench
failover-bench: build
	bin/jepsen failover -bin bin -threads 64 -rounds 3 -lease 3s

clean:
	rm -rf bin
