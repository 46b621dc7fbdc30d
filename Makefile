# uraid: make test passes the tests; make demo runs the main job.
GO        ?= go
BUILD     := $(CURDIR)/build
VM        := tests/vm/vm
# Guest tests fail instead of skipping when they cannot run: set for every run through the guest.
E2E_ENV   := URAID_E2E=1 URAID_VERIFY=1

.PHONY: all build vet test test-unit test-vm vm-setup bench bench-mapping demo clean

all: build

build:
	$(GO) build -o $(BUILD)/uraid ./cmd/uraid

vet:
	$(GO) vet ./...

# Unit and property tests on the host, race detector on.
test-unit: vet
	URAID_VERIFY=1 $(GO) test -race -count=1 ./...

# The kernel-level suite (tests/) runs as root in a guest with a ublk kernel. Everything it runs
# is built here on the host; the guest sees this tree at the same path.
test-vm: vm-setup
	@mkdir -p $(BUILD)
	$(GO) test -c -race -o $(BUILD)/tests.test ./tests
	$(GO) build -o $(BUILD)/uraid ./cmd/uraid
	$(VM) run -m 3072 -t 3600 -- env $(E2E_ENV) URAID_BIN=$(BUILD)/uraid \
		$(BUILD)/tests.test -test.v -test.count=1 -test.timeout=55m

vm-setup:
	@$(VM) check >/dev/null 2>&1 || $(VM) setup

test: test-unit test-vm

bench: bench-mapping

bench-mapping:
	$(GO) test -run '^$$' -bench . -benchmem ./mapping/

# The main job: a RAID10 over four sparse files with ext4 -o discard. Runs directly where the
# kernel has ublk and we are root, in the guest otherwise.
demo: build
	@if [ "$$(id -u)" = 0 ] && [ -e /dev/ublk-control ]; then \
		URAID=$(BUILD)/uraid tests/demo.sh; \
	else \
		$(MAKE) --no-print-directory vm-setup && \
		$(VM) run -- env URAID=$(BUILD)/uraid DEMO_DIR=/tmp/uraid-demo tests/demo.sh; \
	fi

clean:
	rm -rf $(BUILD)
