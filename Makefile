# fingerseal — build, test, benchmark, demo, install.
#   make            release build
#   make check      all tests, man page lint included (installs what they need first)
#   make system-check  the system-test tier alone: the packages on a booted Debian 12 guest
#   make bench      benchmarks, printed against baselines measured in the same run
#   make demo       a walk through fingerseal on this machine, in a throwaway vault
#   make fuzz       libFuzzer: the parsers, the PAM module's entry points, the broker's dispatcher
#                   (FUZZ_SECONDS per target, default 60)
#   make fuzz-long  the same targets for FUZZ_RUNS executions each (default 10^6), growing and
#                   minimizing the corpus in Fuzz/corpus/<target>/ (commit what it adds)
#   make faults     injected faults at every site of each path (long); make check runs a few
#   make soak       10,000 PAM authentications through one broker (SOAK, default 10000), then
#                   1,000 through fprintd (SOAK_FPRINTD): outcomes, memory, descriptors, threads
#   make valgrind   100 pamtester transactions loading the module under memcheck (VALGRIND_RUNS)
#   make sanitize   the broker, CLI, helpers and module under ASan+LSan+UBSan, then TSan, with
#                   their suites (scripts/sanitize; long: a build each)
#   make completions  regenerate the checked-in bash and zsh completions from the command tree
#   make deb        the Debian packages, build/deb/fingerseal{,-agent}_<version>_<arch>.deb (debian/)
#   make install    DESTDIR and PREFIX honoured; the module goes to the PAM module directory,
#                   the broker to PREFIX/libexec/fingerseal (the unit's ExecStart is rewritten
#                   to match), its units to SYSTEMDUNITDIR, its PAM service to PAMDDIR; the
#                   session agent beside the broker, its user unit to SYSTEMDUSERUNITDIR and its
#                   D-Bus files to PREFIX/share/dbus-1 (ExecStart and Exec rewritten to match)

PREFIX    ?= /usr/local
DESTDIR   ?=
MULTIARCH ?= $(shell gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
PAMDIR    ?= /lib/$(MULTIARCH)/security
UDEVDIR   ?= /lib/udev
PAMCONFIGDIR ?= /usr/share/pam-configs
PAMDDIR   ?= /etc/pam.d
SYSTEMDUNITDIR ?= /lib/systemd/system
# The journal catalog of the audit events (journalctl -x); journalctl --update-catalog after.
SYSTEMDCATALOGDIR ?= /usr/lib/systemd/catalog
# Where the user manager looks for units (systemd's pkg-config file says; /usr/lib/systemd/user
# on Debian 12).
SYSTEMDUSERUNITDIR ?= $(or $(shell pkg-config --variable=systemduserunitdir systemd 2>/dev/null),/usr/lib/systemd/user)
# The session bus reads service files from $XDG_DATA_DIRS/dbus-1/services, which holds
# /usr/local/share and /usr/share by default.
DBUSDIR   ?= $(PREFIX)/share/dbus-1
SYSUSERSDIR ?= /usr/lib/sysusers.d
SYSCONFDIR ?= /etc
BASHCOMPDIR ?= /usr/share/bash-completion/completions
ZSHCOMPDIR ?= /usr/share/zsh/vendor-completions
SWIFT     ?= swift
RELEASE   := .build/release
# The PAM module, in Embedded Swift (scripts/build-module): SwiftPM builds the programs only.
MODULE    := .build/embedded/pam_fingerseal.so
# lld: GNU ld warns about a mktemp reference inside the toolchain's static Foundation.
BUILD_RELEASE := $(SWIFT) build -c release --static-swift-stdlib -Xswiftc -use-ld=lld

.PHONY: all deps build module locale check system-check sanitize fuzz fuzz-long faults soak valgrind bench demo completions deb install uninstall clean

all: build

deps:
	@scripts/install-deps

# The products: what is installed and benchmarked. Every other target builds in release too
# (`swift build -c release`, which `make check` keeps true), but nothing here needs them.
RELEASE_PRODUCTS := fingersealed fingerseal fingerseal-agent fingerseal-bench verify-latency dialog-demo
build: deps locale module
	for product in $(RELEASE_PRODUCTS); do $(BUILD_RELEASE) --product $$product || exit 1; done

# Rebuilt when older than any of its sources (the script knows which they are).
module:
	SWIFTC=$(dir $(shell command -v $(SWIFT)))swiftc scripts/build-module --if-stale $(MODULE)

# The message catalogs: po/LANG.po → .build/locale/LANG/LC_MESSAGES/fingerseal.mo.
LINGUAS := $(basename $(notdir $(wildcard po/*.po)))
locale: $(foreach l,$(LINGUAS),.build/locale/$(l)/LC_MESSAGES/fingerseal.mo)
.build/locale/%/LC_MESSAGES/fingerseal.mo: po/%.po
	@mkdir -p $(dir $@)
	msgfmt --check -o $@ $<

check: deps module
	$(SWIFT) build --build-tests
	# The guard runs whatever the tests said: a test that replaced /dev/null fails the run.
	# The tests make their own sessions, so they run outside the runner's (CI's ssh login).
	status=0; scripts/outside-login-session $(SWIFT) test --skip-build || status=$$?; scripts/guard-dev-null || status=1; exit $$status
	scripts/test-units .build/debug/fingerseal-agent
	$(SWIFT) build --product fingerseal
	scripts/lint-man .build/debug/fingerseal .build/debug/fingerseal-agent
	scripts/outside-login-session scripts/system-test-pam
	# Every target in release, the products the package steps below use among them: as
	# `swift build -c release` on a fresh clone builds them (the tests' fixtures in TestSupport
	# included, which must not `@testable import` a module built without testing). Beyond the
	# products this costs about 15 s.
	$(BUILD_RELEASE)
	# In a throwaway overlay of /: the tests above leave a fingerseal-rig group (BrokerTests),
	# which the package's purge would delete on the real machine.
	scripts/test-deb --overlay
	# The system-test tier: those packages on a booted Debian 12 guest (QEMU, TCG), every flow
	# a person meets (README, "The system-test tier").
	scripts/system-check --deb "$$(ls build/deb/fingerseal_*_amd64.deb | head -n 1)"
	# 15 s per target, three targets: under a minute with the harness already built.
	FUZZ_SECONDS=$${FUZZ_SECONDS:-15} scripts/fuzz
	# The broker, CLI and helpers built with ASan+UBSan, started by the ordinary test binary in
	# a few broker suites, and the module under ASan in pamtester (scripts/sanitize --ci).
	scripts/sanitize address --ci

# The system-test tier alone: the packages built (scripts/build-deb), then the guest.
system-check: deps
	scripts/system-check

# Every sanitized suite, the test binary sanitized too; both builds are full ones.
sanitize: deps
	status=0; scripts/sanitize address || status=$$?; scripts/sanitize thread || status=$$?; exit $$status

fuzz: build
	scripts/fuzz

fuzz-long: build
	scripts/fuzz --long

# Every site of malloc, open, read, write, fsync, rename, socket, connect, sendmsg, recvmsg and
# poll on each path failed in a run of its own, interruptible ones again with EINTR
# (FaultInjectionTests; make check fails one site per call group). Prints the table.
FAULT_REPORT := $(CURDIR)/.build/fault-inject/report.tsv
faults: deps module
	$(SWIFT) build --build-tests
	scripts/build-fault-inject
	rm -f $(FAULT_REPORT)
	status=0; FAULT_SWEEP=full FAULT_REPORT=$(FAULT_REPORT) scripts/outside-login-session \
		$(SWIFT) test --skip-build --filter FaultInjectionTests || status=$$?; \
	{ printf 'path\truns\tpoints seen\tpoints failed\tallocator traps\tfindings\n'; cat $(FAULT_REPORT); } | column -t -s "$$(printf '\t')"; \
	exit $$status

# Long runs of two tests that `make check` runs short (SoakTests, ValgrindTests); their figures
# are printed and kept in .build/test-output/.
SOAK ?= 10000
SOAK_FPRINTD ?= 1000
soak: deps module
	$(SWIFT) build --build-tests
	FINGERSEAL_SOAK=$(SOAK) FINGERSEAL_SOAK_FPRINTD=$(SOAK_FPRINTD) \
		scripts/outside-login-session $(SWIFT) test --skip-build --filter SoakTests

VALGRIND_RUNS ?= 100
valgrind: deps module
	$(SWIFT) build --build-tests
	FINGERSEAL_VALGRIND=$(VALGRIND_RUNS) scripts/outside-login-session $(SWIFT) test --skip-build --filter ValgrindTests

bench: build
	scripts/bench

demo: build
	scripts/demo

# Checked in (packages install them without running the binary; a diff shows what a change to
# the command tree does to them); CompletionTests fails when they differ from the generator.
completions:
	$(SWIFT) build --product fingerseal
	LC_ALL=C LANGUAGE= $$($(SWIFT) build --show-bin-path)/fingerseal completion bash >completions/bash/fingerseal
	LC_ALL=C LANGUAGE= $$($(SWIFT) build --show-bin-path)/fingerseal completion zsh >completions/zsh/_fingerseal
# dpkg-buildpackage in this tree (debian/rules builds with swift from PATH or /opt/swift); the
# .deb, .buildinfo and .changes go to build/deb, not to the parent directory.
DEBDIR := $(CURDIR)/build/deb
deb: deps
	scripts/build-deb $(DEBDIR)

install: build
	install -D -m 0644 $(MODULE) $(DESTDIR)$(PAMDIR)/pam_fingerseal.so
	install -D -m 0755 $(RELEASE)/fingerseal $(DESTDIR)$(PREFIX)/bin/fingerseal
	install -D -m 0755 $(RELEASE)/fingersealed $(DESTDIR)$(PREFIX)/libexec/fingerseal/fingersealed
	install -D -m 0755 $(RELEASE)/fingerseal-agent $(DESTDIR)$(PREFIX)/libexec/fingerseal/fingerseal-agent
	install -D -m 0644 systemd/fingerseal.socket $(DESTDIR)$(SYSTEMDUNITDIR)/fingerseal.socket
	install -D -m 0644 systemd/fingerseal.catalog $(DESTDIR)$(SYSTEMDCATALOGDIR)/fingerseal.catalog
	sed 's|^ExecStart=/usr/libexec/fingerseal/fingersealed|ExecStart=$(PREFIX)/libexec/fingerseal/fingersealed|' \
		systemd/fingerseal.service >$(DESTDIR)$(SYSTEMDUNITDIR)/fingerseal.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/fingerseal.service
	# The session agent: D-Bus activation (the service file) hands the start to the user unit.
	install -d $(DESTDIR)$(SYSTEMDUSERUNITDIR) $(DESTDIR)$(DBUSDIR)/services $(DESTDIR)$(DBUSDIR)/interfaces
	sed 's|^ExecStart=/usr/libexec/fingerseal/fingerseal-agent|ExecStart=$(PREFIX)/libexec/fingerseal/fingerseal-agent|' \
		systemd/fingerseal-agent.service >$(DESTDIR)$(SYSTEMDUSERUNITDIR)/fingerseal-agent.service
	sed 's|^Exec=/usr/libexec/fingerseal/fingerseal-agent|Exec=$(PREFIX)/libexec/fingerseal/fingerseal-agent|' \
		dbus/org.fingerseal.Agent1.service >$(DESTDIR)$(DBUSDIR)/services/org.fingerseal.Agent1.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUSERUNITDIR)/fingerseal-agent.service $(DESTDIR)$(DBUSDIR)/services/org.fingerseal.Agent1.service
	# The interface as the agent itself defines it (one definition, AgentInterface.swift).
	$(RELEASE)/fingerseal-agent --print-interface >$(DESTDIR)$(DBUSDIR)/interfaces/org.fingerseal.Agent1.xml
	chmod 0644 $(DESTDIR)$(DBUSDIR)/interfaces/org.fingerseal.Agent1.xml
	install -D -m 0644 pam/fingerseal-verify $(DESTDIR)$(PAMDDIR)/fingerseal-verify
	install -D -m 0644 systemd/fingerseal.sysusers $(DESTDIR)$(SYSUSERSDIR)/fingerseal.conf
	# The rig group now, on this machine (a package's postinst does this through sysusers).
	if [ -z "$(DESTDIR)" ]; then groupadd -f -r fingerseal-rig; fi
	# useradd's and userdel's hooks (shadow's run-parts directories), calling this CLI.
	for hook in useradd-post userdel-pre; do install -d $(DESTDIR)$(SYSCONFDIR)/shadow-maint/$$hook.d; \
		sed 's|^fingerseal=/usr/bin/fingerseal$$|fingerseal=$(PREFIX)/bin/fingerseal|' shadow-maint/$$hook \
			>$(DESTDIR)$(SYSCONFDIR)/shadow-maint/$$hook.d/fingerseal; \
		chmod 0755 $(DESTDIR)$(SYSCONFDIR)/shadow-maint/$$hook.d/fingerseal; done
	install -D -m 0644 pam/fingerseal.pam-config $(DESTDIR)$(PAMCONFIGDIR)/fingerseal
	install -D -m 0644 pam/fingerseal-session.pam-config $(DESTDIR)$(PAMCONFIGDIR)/fingerseal-session
	install -D -m 0644 pam/fingerseal-password.pam-config $(DESTDIR)$(PAMCONFIGDIR)/fingerseal-password
	install -D -m 0644 man/fingerseal.1 $(DESTDIR)$(PREFIX)/share/man/man1/fingerseal.1
	install -D -m 0644 man/fingerseal.conf.5 $(DESTDIR)$(PREFIX)/share/man/man5/fingerseal.conf.5
	for l in $(LINGUAS); do install -D -m 0644 .build/locale/$$l/LC_MESSAGES/fingerseal.mo \
		$(DESTDIR)$(PREFIX)/share/locale/$$l/LC_MESSAGES/fingerseal.mo; done
	install -D -m 0644 man/pam_fingerseal.8 $(DESTDIR)$(PREFIX)/share/man/man8/pam_fingerseal.8
	install -D -m 0644 man/fingersealed.8 $(DESTDIR)$(PREFIX)/share/man/man8/fingersealed.8
	# Written apart from the agent: installed once it is there.
	if [ -f man/fingerseal-agent.8 ]; then \
		install -D -m 0644 man/fingerseal-agent.8 $(DESTDIR)$(PREFIX)/share/man/man8/fingerseal-agent.8; fi
	install -d $(DESTDIR)$(PREFIX)/share/doc/fingerseal/pam
	install -m 0644 pam/examples/* pam/README.md $(DESTDIR)$(PREFIX)/share/doc/fingerseal/pam/
	install -d $(DESTDIR)$(PREFIX)/share/doc/fingerseal/examples/apps
	install -m 0644 examples/apps/* $(DESTDIR)$(PREFIX)/share/doc/fingerseal/examples/apps/
	install -D -m 0644 udev/70-fingerseal.rules $(DESTDIR)$(UDEVDIR)/rules.d/70-fingerseal.rules
	install -D -m 0644 completions/bash/fingerseal $(DESTDIR)$(BASHCOMPDIR)/fingerseal
	install -D -m 0644 completions/zsh/_fingerseal $(DESTDIR)$(ZSHCOMPDIR)/_fingerseal
	install -D -m 0644 examples/fingerseal.conf $(DESTDIR)$(PREFIX)/share/doc/fingerseal/fingerseal.conf
	# The configuration, all commented out: never over an administrator's file, and not when
	# only the older /etc/security/fingerseal.conf exists (it is read only without this one).
	install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/fingerseal
	if [ ! -e $(DESTDIR)$(SYSCONFDIR)/fingerseal/fingerseal.conf ] && [ ! -e $(DESTDIR)$(SYSCONFDIR)/security/fingerseal.conf ]; then \
		install -m 0644 examples/fingerseal.conf $(DESTDIR)$(SYSCONFDIR)/fingerseal/fingerseal.conf; fi

uninstall:
	rm -f $(DESTDIR)$(PAMDIR)/pam_fingerseal.so $(DESTDIR)$(PREFIX)/bin/fingerseal
	rm -f $(DESTDIR)$(PREFIX)/libexec/fingerseal/fingersealed $(DESTDIR)$(PAMCONFIGDIR)/fingerseal
	rm -f $(DESTDIR)$(PREFIX)/libexec/fingerseal/fingerseal-agent $(DESTDIR)$(SYSTEMDUSERUNITDIR)/fingerseal-agent.service
	rm -f $(DESTDIR)$(DBUSDIR)/services/org.fingerseal.Agent1.service $(DESTDIR)$(DBUSDIR)/interfaces/org.fingerseal.Agent1.xml
	rm -f $(DESTDIR)$(PAMCONFIGDIR)/fingerseal-session $(DESTDIR)$(PAMCONFIGDIR)/fingerseal-password
	rm -f $(DESTDIR)$(SYSTEMDUNITDIR)/fingerseal.socket $(DESTDIR)$(SYSTEMDUNITDIR)/fingerseal.service $(DESTDIR)$(SYSTEMDCATALOGDIR)/fingerseal.catalog
	rm -f $(DESTDIR)$(PAMDDIR)/fingerseal-verify $(DESTDIR)$(SYSUSERSDIR)/fingerseal.conf
	rm -f $(DESTDIR)$(SYSCONFDIR)/shadow-maint/useradd-post.d/fingerseal $(DESTDIR)$(SYSCONFDIR)/shadow-maint/userdel-pre.d/fingerseal
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/fingerseal/pam $(DESTDIR)$(PREFIX)/share/doc/fingerseal/fingerseal.conf
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/fingerseal/examples/apps
	# $(SYSCONFDIR)/fingerseal/fingerseal.conf is the administrator's: left in place.
	rm -f $(DESTDIR)$(PREFIX)/share/man/man1/fingerseal.1 $(DESTDIR)$(PREFIX)/share/man/man5/fingerseal.conf.5
	rm -f $(DESTDIR)$(PREFIX)/share/man/man8/pam_fingerseal.8 $(DESTDIR)$(PREFIX)/share/man/man8/fingersealed.8
	rm -f $(DESTDIR)$(PREFIX)/share/man/man8/fingerseal-agent.8
	for l in $(LINGUAS); do rm -f $(DESTDIR)$(PREFIX)/share/locale/$$l/LC_MESSAGES/fingerseal.mo; done
	rm -f $(DESTDIR)$(UDEVDIR)/rules.d/70-fingerseal.rules
	rm -f $(DESTDIR)$(BASHCOMPDIR)/fingerseal $(DESTDIR)$(ZSHCOMPDIR)/_fingerseal

clean:
	rm -rf .build build/deb
