# uraid: make test passes the tests; make demo runs the main job.
GO        ?= go
BUILD     := $(CURDIR)/build
VM        := tests/vm/vm
# Guest tests fail instead of skipping when they cannot run: set for every run through the guest.
E2E_ENV   := URAID_E2E=1 URAID_VERIFY=1
# The kernels the guest suite runs on, each a tests/vm/vm KERNEL=. A bare tests/vm/vm setup (as
# .ci/run calls it) fetches the same set.
KERNELS   ?= 6.1 6.12 7.3
# Kernels built without ublk (Debian 12's own 6.1): the suite there checks only that uraid refuses
# with what is missing and changes nothing (TestE2ENoUblkKernel).
NOUBLK_KERNELS := 6.1

.PHONY: all build vet test test-unit test-robust test-planted test-planted-unit test-planted-all test-vm vm-setup vm-setup-run bench bench-quick bench-build bench-mapping demo clean install robustness robustness-planted

all: build

build:
	$(GO) build -o $(BUILD)/uraid ./cmd/uraid

# bench/ is a module of its own (bench/go.mod), so that the product's go.mod holds only what the
# product imports; ./... stops at its go.mod, so vet and test-unit go into it as well. A module
# whose go.mod or go.sum go mod tidy would change fails vet, so that neither list drifts from what
# its code imports (a dependency left behind, or one used but marked indirect).
vet:
	@for d in $(CURDIR) $(CURDIR)/bench; do (cd $$d && $(GO) mod tidy -diff) || { \
		echo "vet: the module in $$d is not tidy: run go mod tidy in $$d" >&2; exit 1; }; done
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

# Unit and property tests on the host, race detector on; then every in-process benchmark once, so
# that none rots (their figures come from make bench).
# promtool (from .ci/run's unpacked Debian package, when there) checks the metrics; without it the
# daemon tests check them with the linter promtool runs, from the client library.
PROMTOOL ?= $(wildcard $(BUILD)/promtool/usr/bin/promtool)
export PROMTOOL

test-unit: vet
	URAID_VERIFY=1 $(GO) test -race -count=1 ./...
	cd bench && URAID_VERIFY=1 $(GO) test -race -count=1 ./...
	$(GO) test -run '^$$' -bench . -benchtime 1x ./mapping/ ./discard/... ./region/ ./reshape/ ./array/

# The kernel-level suite (tests/) runs as root in a guest with a ublk kernel, once on each of
# KERNELS; every run goes to the end and any failure fails the target. Everything it runs is built
# here on the host; the guest sees this tree at the same path. uraid-next is a second build, for
# the tests that hand a running array over to another binary (uraid restart). A suite takes
# 20-25 minutes on a 2-core host; its 40-minute limit makes a hung test fail its suite with Go's
# list of what was running, leaving the other kernel's suite time to run within CI's 90 minutes,
# and a failed suite's FAIL lines, timeouts and stall dumps are printed again at the end.
test-vm: vm-setup
	@mkdir -p $(BUILD)
	$(GO) test -c -race -o $(BUILD)/tests.test ./tests
	$(GO) build -o $(BUILD)/uraid ./cmd/uraid
	$(GO) build -ldflags "-X main.version=next" -o $(BUILD)/uraid-next ./cmd/uraid
	@failed=; for k in $(KERNELS); do \
		echo "test-vm: KERNEL=$$k: guest suite"; start=$$(date +%s); \
		only=; case " $(NOUBLK_KERNELS) " in *" $$k "*) only=-test.run=^TestE2ENoUblkKernel$$;; esac; \
		{ rc=0; KERNEL=$$k $(VM) run -m 3072 -t 2700 -- env $(E2E_ENV) $(if $(PROMTOOL),PROMTOOL=$(abspath $(PROMTOOL))) URAID_BIN=$(BUILD)/uraid URAID_BIN_NEXT=$(BUILD)/uraid-next \
			$(BUILD)/tests.test -test.v -test.count=1 -test.timeout=40m $$only || rc=$$?; echo $$rc > $(BUILD)/test-vm-$$k.rc; } 2>&1 | \
			tee $(BUILD)/test-vm-$$k.log; rc=$$(cat $(BUILD)/test-vm-$$k.rc); \
		if [ $$rc = 0 ]; then r=passed; else r="FAILED (exit $$rc)"; failed="$$failed $$k"; fi; \
		echo "test-vm: KERNEL=$$k: guest suite $$r in $$(($$(date +%s) - start))s"; \
	done; \
	for k in $$failed; do \
		echo "test-vm: KERNEL=$$k: the log's last lines (all of it in $(BUILD)/test-vm-$$k.log):"; \
		tail -n 25 $(BUILD)/test-vm-$$k.log | cut -c1-300; \
		echo "test-vm: KERNEL=$$k: the tests last started:"; \
		grep -a -E '^=== (RUN|CONT)' $(BUILD)/test-vm-$$k.log | tail -n 4; \
		echo "test-vm: KERNEL=$$k: what failed:"; \
		grep -a -E -A4 '^(--- FAIL|panic:)|no progress after|did not finish in' $(BUILD)/test-vm-$$k.log | cut -c1-300 | head -60; \
	done; \
	if [ -n "$$failed" ]; then echo "test-vm: guest suite FAILED on KERNEL=$${failed# }"; exit 1; fi; \
	echo "test-vm: guest suite passed on KERNEL=$(KERNELS)"

vm-setup:
	@for k in $(KERNELS); do KERNEL=$$k $(VM) check >/dev/null 2>&1 || KERNEL=$$k $(VM) setup || exit; done

# The one kernel a single guest run boots (demo, the benchmarks): KERNEL= if given, else
# tests/vm/vm's default. Only that one is fetched: the others in KERNELS are make test's.
RUN_KERNEL = $(or $(KERNEL),6.12)
vm-setup-run:
	@KERNEL=$(RUN_KERNEL) $(VM) check >/dev/null 2>&1 || KERNEL=$(RUN_KERNEL) $(VM) setup

test: test-unit test-robust test-planted test-planted-unit test-vm

# The robustness harness, bounded for make test (under 3 minutes with the race detector on a
# 2-core host, 3.5 beside a guest): the disk tests, then ROBUST_OPS requests on each layout (the
# redundant ones and linear) from seed ROBUST_SEED. It mounts its disks with FUSE, so it runs as root where
# /dev/fuse is.
ROBUST_SEED ?= 1
ROBUST_OPS  ?= 1000
test-robust:
	@if [ "$$(id -u)" != 0 ] || [ ! -c /dev/fuse ]; then \
		echo "test-robust: the harness mounts its disks with FUSE: run make test as root on a host with /dev/fuse (modprobe fuse)"; exit 1; fi
	URAID_ROBUST=1 URAID_VERIFY=1 $(GO) test -race -count=1 -timeout 5m ./robust/simdisk/
	URAID_ROBUST=1 URAID_VERIFY=1 $(GO) test -race -count=1 -timeout 10m -run 'TestRobustness$$' ./robust/ \
		-robust.seed=$(ROBUST_SEED) -robust.ops=$(ROBUST_OPS) -robust.deadline=9m

# Planted defects (internal/plant, docs/robustness.md), each put back and the harness run over
# seeds from 1 on every redundant layout (linear for a linear defect) until it finds it (a finding counts only if the same seed
# finds nothing without it); a defect not found within its budget of requests fails. make test
# runs PLANT_CI, the defects the harness finds within a bound CI can afford, each in a process of
# its own and all at once: a run mostly waits (a third of a core each), and the target then takes
# the longest one's time, not their sum. The most requests any took in a run, over six to seven
# runs each, were 11207 (D), 6034 (E), 46242 (map), 84000 (clean, where seven other runs took
# at most 11764), 30023 (recovery) and 32902 (torn): the tails are long, so PLANT_CI_OPS is
# 300000 (a defect found by seed 1 half the time and by a later seed a fifth of the time is
# missed by 25 seeds once in 500 runs), and the 20-minute deadline bounds the worst case (a
# process alone does about 500 requests a second). A defect may name the moods it runs with
# (NAME:STORM,CALM,HEALING[,CHECKPOINT], -robust.moods): A, B and C, healing paths, run healing
# epochs only, which found them in 5148 to 35682 (A), 9000 to 47698 (B) and 42 to 30694 (C)
# requests, five runs each, where the mixed moods took up to 105579, 44655 and 91384; F runs calm
# and checkpoint epochs, which found it in 3000 to 32798 requests (three searches); resyncend,
# whose divergent copies only a crash makes, runs storms only, which found it in 6487 to 20189
# requests (three searches; the mixed moods took 18407 to 58631); copiesfill was found in 6000 to
# 18000 (three searches, mixed moods); appendorder, on the linear layout alone, in 2019 to 50335
# (four searches, from seeds 1, 101, 201 and 301); reshapepark, on raid10 n2 and o2 (the layouts
# that reshape), in 1549 to 2226 (four searches, seeds 1, 101, 201, 301, each the first seed's
# run). The others took 17000 to
# more than 100000 requests with any moods tried, ten-fold apart between runs of the same
# defect, which no bound fit for CI's 90 minutes covers: make test-planted-all runs every one in
# turn (up to PLANT_OPS each, 35 minutes). No race detector, for speed (test-robust has it).
PLANT_CI     ?= D E map clean recovery torn A:0,0,1 B:0,0,1 C:0,0,1 F:0,1,0,1 resyncend:1,0,0 copiesfill appendorder reshapepark fixedtag
PLANT_CI_OPS ?= 300000
PLANT_OPS    ?= 200000
test-planted:
	@if [ "$$(id -u)" != 0 ] || [ ! -c /dev/fuse ]; then \
		echo "test-planted: the harness mounts its disks with FUSE: run make test as root on a host with /dev/fuse (modprobe fuse)"; exit 1; fi
	@mkdir -p $(BUILD)
	$(GO) test -c -tags uraid_plant -o $(BUILD)/robust-plant.test ./robust/
	@start=$$(date +%s); cd robust && for e in $(PLANT_CI); do d=$${e%%:*}; moods=; case $$e in *:*) moods=-robust.moods=$${e#*:};; esac; \
		( URAID_ROBUST=1 TMPDIR=$$(mktemp -d) $(BUILD)/robust-plant.test -test.count=1 -test.timeout=22m -test.v -test.run 'TestPlanted$$' \
			-robust.plant=$$d $$moods -robust.ops=$(PLANT_CI_OPS) -robust.deadline=20m >$(BUILD)/planted-$$d.log 2>&1; \
		  echo $$? >$(BUILD)/planted-$$d.rc ) & \
	done; wait; failed=; \
	for e in $(PLANT_CI); do d=$${e%%:*}; \
		if [ "$$(cat $(BUILD)/planted-$$d.rc)" = 0 ]; then grep -h -o 'planted .*: found on.*confirm)' $(BUILD)/planted-$$d.log | cut -c1-200; \
		else failed="$$failed $$d"; echo "test-planted: $$d FAILED (all of it in $(BUILD)/planted-$$d.log):"; tail -n 30 $(BUILD)/planted-$$d.log | cut -c1-300; fi; \
	done; echo "test-planted: $(PLANT_CI) in $$(($$(date +%s) - start))s"; \
	if [ -n "$$failed" ]; then echo "test-planted: not found:$$failed"; exit 1; fi

# Planted defects the harness cannot see, each caught by unit tests instead: NAME:PACKAGE:TESTS
# puts NAME back (URAID_PLANT, internal/plant) and runs the tests, every one of which must fail
# (test-unit runs them without the defect, where they pass). steer: a read priced by its copies'
# I/O counts alone, their TRIMs in flight left out; the harness checks what reads return, not how
# long they wait, so only the steering tests see it. reshapewindow: a reshape step one row past
# its safe distance; its model test (a cut at every step) and its step property test find it.
# reshapeorder: the array's offline reshape persisting a step's state before its home writes;
# the harness does not reshape yet, TestReshape's cuts at each step's write phase find it.
# reshapepark: the online reshape letting a write into a step's window; TestReshapeOnline's reads
# of the clients' own blocks find it in the first steps. Seconds, no FUSE.
PLANT_UNIT ?= steer:./discard/:TestBeginReadSteers,TestLearnsExclusiveAndSteersAway reshapewindow:./reshape/:TestModelCrashAtEveryStep,TestPropertySteps \
	reshapeorder:./array/:TestReshape reshapepark:./array/:TestReshapeOnline
test-planted-unit:
	@failed=; for e in $(PLANT_UNIT); do d=$${e%%:*}; rest=$${e#*:}; pkg=$${rest%%:*}; tests=$${rest#*:}; \
		out=$$(URAID_PLANT=$$d $(GO) test -count=1 -tags uraid_plant -run "^($$(echo $$tests | tr , '|'))$$" $$pkg 2>&1); \
		for t in $$(echo $$tests | tr , ' '); do \
			if echo "$$out" | grep -q -- "--- FAIL: $$t "; then echo "test-planted-unit: $$d caught by $$t"; \
			else failed="$$failed $$d/$$t"; echo "$$out" | tail -n 20; fi; \
		done; \
	done; if [ -n "$$failed" ]; then echo "test-planted-unit: not caught:$$failed"; exit 1; fi

test-planted-all:
	@if [ "$$(id -u)" != 0 ] || [ ! -c /dev/fuse ]; then \
		echo "test-planted-all: the harness mounts its disks with FUSE: run as root on a host with /dev/fuse (modprobe fuse)"; exit 1; fi
	URAID_ROBUST=1 $(GO) test -count=1 -timeout 40m -v -tags uraid_plant -run 'TestPlanted$$' ./robust/ \
		-robust.ops=$(PLANT_OPS) -robust.deadline=35m

# The suite against md (bench/, docs/benchmarks.md): four simulated SSDs served by simssd, md and
# uraid built over them in turn, in the guest; (e), (g) and (k) over brd RAM disks instead. bench
# rewrites docs/bench/results.json and docs/img/; bench-quick (RAID10 only, smaller, one repetition)
# prints its ratios beside the committed ones and fails only if a scenario cannot run. How long
# each takes, measured: see docs/benchmarks.md (Reproducing).
BENCH_OUT := $(BUILD)/bench

# bench/ is its own module, so its commands are built from inside it: abspath keeps the binaries in
# BUILD when BUILD is given as a relative path.
bench-build:
	@mkdir -p $(BENCH_OUT)
	$(GO) build -o $(BUILD)/uraid ./cmd/uraid
	$(GO) build -o $(BUILD)/simssd ./cmd/simssd
	cd bench && $(GO) build -o $(abspath $(BUILD))/benchrun ./cmd/benchrun
	cd bench && $(GO) build -o $(abspath $(BUILD))/benchreport ./cmd/benchreport

# Timings need the host to themselves: the runs refuse to start while another QEMU guest runs
# (BENCH_ALLOW_BUSY=1 measures anyway, and then keeps figures the guest's own check finds disturbed).
BENCH_IDLE = n=$$(pgrep -c qemu-system || true); if [ "$${n:-0}" -gt 0 ] && [ -z "$(BENCH_ALLOW_BUSY)" ]; then \
	echo "bench: $$n other QEMU guest(s) running: timings would be meaningless; wait for them, or set BENCH_ALLOW_BUSY=1" >&2; exit 1; fi
BENCH_BUSY_FLAG = $(if $(BENCH_ALLOW_BUSY),--allow-busy)

# After the guest suite, on the host: the discard engine's benchmarks, and the region map's cost to
# 4 KiB random writes at QD32 (target: with the map >= 0.9x without), six runs of each for the
# spread.
# Scenario (j) measures uraid beside the reference C ublk server where PEER_UBLK names its ublk
# command, which bench/peer-ublksrv.sh builds from a source checkout outside this tree (it is
# never part of it); without it, (j) measures uraid alone and says so.
PEER_UBLK ?=
BENCH_PEER_FLAG = $(if $(PEER_UBLK),--peer-ublk $(abspath $(PEER_UBLK)))

bench: vm-setup-run bench-build
	@$(BENCH_IDLE)
	{ $(VM) run -m 4096 -t 3600 -- bench/guest.sh --reps 3 $(BENCH_BUSY_FLAG) $(BENCH_PEER_FLAG); echo $$? >$(BENCH_OUT)/rc; } 2>&1 | tee $(BENCH_OUT)/bench.log
	$(BUILD)/benchreport -log $(BENCH_OUT)/bench.log -out docs/bench/results.json -plots docs/img \
		| tee $(BENCH_OUT)/report.md
	$(GO) test -run '^$$' -bench . ./discard/... | tee $(BENCH_OUT)/discard-engine.txt
	$(GO) test -run '^$$' -bench ArrayRandomWrite -count 6 ./array/ | tee $(BENCH_OUT)/region-map.txt
	@exit $$(cat $(BENCH_OUT)/rc)

bench-quick: vm-setup-run bench-build
	@$(BENCH_IDLE)
	{ $(VM) run -m 3072 -t 900 -- bench/guest.sh --quick --reps 1 $(BENCH_BUSY_FLAG) $(BENCH_PEER_FLAG); echo $$? >$(BENCH_OUT)/rc; } 2>&1 \
		| tee $(BENCH_OUT)/quick.log
	$(BUILD)/benchreport -log $(BENCH_OUT)/quick.log -out $(BENCH_OUT)/quick.json -ref docs/bench/results.json
	@exit $$(cat $(BENCH_OUT)/rc)

# The ublk file target against the kernel loop device over a RAM block device in the guest
# (bench/ublkbench, docs/bench-ublk.md); how long, measured: see docs/benchmarks.md (Reproducing).
# Rewrites docs/bench/ublk.json;
# the server's CPU profile is left in build/ublkbench/cpu.prof.
UBLKBENCH      := $(BUILD)/ublkbench
UBLKBENCH_ARGS ?= -reps 3
UBLKBENCH_JSON ?= docs/bench/ublk.json

.PHONY: bench-ublk
bench-ublk: vm-setup-run
	@mkdir -p $(UBLKBENCH)
	cd bench && $(GO) build -o $(abspath $(UBLKBENCH))/ublkbench ./cmd/ublkbench
	{ $(VM) run -m 3072 -t 1500 -- env UBLKBENCH=$(UBLKBENCH)/ublkbench bench/ublkbench/guest.sh brd \
		$(UBLKBENCH_ARGS) -cpuprofile /tmp/ublkbench.prof; echo $$? >$(UBLKBENCH)/rc; } 2>&1 | tee $(UBLKBENCH)/bench.log
	$(UBLKBENCH)/ublkbench report -log $(UBLKBENCH)/bench.log -out $(UBLKBENCH_JSON) -cpuprofile $(UBLKBENCH)/cpu.prof \
		| tee $(UBLKBENCH)/report.md
	$(GO) tool pprof -top -nodecount=25 $(UBLKBENCH)/cpu.prof 2>/dev/null | tee $(UBLKBENCH)/pprof.txt
	@exit $$(cat $(UBLKBENCH)/rc)

bench-mapping:
	$(GO) test -run '^$$' -bench . -benchmem ./mapping/

# The robustness harness (docs/robustness.md): a random workload, membership changes, member
# errors, power losses and kills over simulated disks with a volatile cache, the history checked
# for linearizability. Needs root and /dev/fuse (the disks are a FUSE file system the test binary
# serves from a second process). make robustness [SEED=n] [DURATION=10m] [LAYOUT=raid10-near]; a
# failure prints the command that replays it. make test runs a bounded run (test-robust).
SEED     ?= 0
DURATION ?= 2m
LAYOUT   ?=
robustness:
	URAID_ROBUST=1 $(GO) test -count=1 -timeout 0 ./robust/simdisk/
	URAID_ROBUST=1 $(GO) test -count=1 -timeout 0 -v -run 'TestRobustness$(if $(LAYOUT),/$(LAYOUT)$$)' ./robust/ \
		-robust.seed=$(SEED) -robust.duration=$(DURATION) -robust.deadline=$$(( $$(echo $(DURATION) | sed 's/m$$/*60/; s/s$$//; s/h$$/*3600/') * 5 + 300 ))s

# Planted defects without make test's bounds: make robustness-planted PLANT=claim[,A...] runs the
# named ones (claim, which the harness is not known to reach, only so) with PLANT_OPS requests each.
PLANT ?=
robustness-planted:
	URAID_ROBUST=1 $(GO) test -count=1 -timeout 0 -v -tags uraid_plant -run TestPlanted ./robust/ \
		-robust.plant=$(PLANT) -robust.ops=$(PLANT_OPS) -robust.deadline=$$(( $(PLANT_OPS) / 100 + 600 ))s

# The main job: a RAID10 over four sparse files with ext4 -o discard. Runs directly where the
# kernel has ublk and we are root, in the guest otherwise.
demo: build
	@if [ "$$(id -u)" = 0 ] && [ -e /dev/ublk-control ]; then \
		URAID=$(BUILD)/uraid tests/demo.sh; \
	else \
		$(MAKE) --no-print-directory vm-setup-run && \
		KERNEL=$(RUN_KERNEL) $(VM) run -- env URAID=$(BUILD)/uraid DEMO_DIR=/tmp/uraid-demo tests/demo.sh; \
	fi

clean:
	rm -rf $(BUILD)

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary, the systemd units, the udev rules and the
# docs (docs/boot.md says what they do). The unit and the rules name the binary where it goes.
# A distribution package would set PREFIX=/usr UDEVRULESDIR=/usr/lib/udev/rules.d
# SYSTEMDUNITDIR=/usr/lib/systemd/system.
PREFIX         ?= /usr/local
BINDIR         ?= $(PREFIX)/bin
DOCDIR         ?= $(PREFIX)/share/doc/uraid
UDEVRULESDIR   ?= /etc/udev/rules.d
SYSTEMDUNITDIR ?= /etc/systemd/system
INSTALLED_BIN   = sed -e 's|/usr/local/bin/uraid|$(BINDIR)/uraid|g' -e 's|/usr/local/share/doc/uraid|$(DOCDIR)|g'

install: build
	install -D -m 0755 $(BUILD)/uraid $(DESTDIR)$(BINDIR)/uraid
	install -d $(DESTDIR)$(UDEVRULESDIR) $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(DOCDIR)
	$(INSTALLED_BIN) packaging/udev/69-uraid.rules >$(DESTDIR)$(UDEVRULESDIR)/69-uraid.rules
	$(INSTALLED_BIN) packaging/systemd/uraid@.service >$(DESTDIR)$(SYSTEMDUNITDIR)/uraid@.service
	$(INSTALLED_BIN) packaging/systemd/uraid-monitor.service >$(DESTDIR)$(SYSTEMDUNITDIR)/uraid-monitor.service
	chmod 0644 $(DESTDIR)$(UDEVRULESDIR)/69-uraid.rules $(DESTDIR)$(SYSTEMDUNITDIR)/uraid@.service \
		$(DESTDIR)$(SYSTEMDUNITDIR)/uraid-monitor.service
	install -m 0644 README.md docs/*.md $(DESTDIR)$(DOCDIR)/
	@if [ -z "$(DESTDIR)" ]; then echo "install: now run: udevadm control --reload && systemctl daemon-reload"; fi
