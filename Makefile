# libception - top-level build.
#   make                      build everything into build/ (same layout as an install)
#   make install PREFIX=DIR   install bin/, lib/ and share/libception under DIR (honours DESTDIR)
#   make test                 install what the tests need (Debian 12, as root), build, run all tests
#   make demo                 the one-command benchmark: nginx vs nginx under libception on an emulated disk
#   make fuzz                 fuzz receptiond's message path for FUZZ_S seconds (default 600; libFuzzer)
PREFIX     ?= /usr/local
COMPONENTS  = preload receptiond hddsim vidload
BUILD       = $(CURDIR)/build

.PHONY: all $(COMPONENTS) install test check demo deps clean fuzz

all: $(COMPONENTS)
	@$(MAKE) --no-print-directory install PREFIX=$(BUILD) DESTDIR= LINK_HARNESS=1 >/dev/null

$(COMPONENTS):
	$(MAKE) -C $@

install: $(COMPONENTS)
	for c in $(COMPONENTS); do $(MAKE) -C $$c install PREFIX=$(PREFIX) || exit 1; done
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/libception
	install -m 755 harness/bin/libception $(DESTDIR)$(PREFIX)/bin/libception
ifeq ($(LINK_HARNESS),1)
	@# a copy left by `make install PREFIX=build` would take the link inside it
	[ -L $(DESTDIR)$(PREFIX)/share/libception/harness ] || rm -rf $(DESTDIR)$(PREFIX)/share/libception/harness
	ln -sfn $(CURDIR)/harness $(DESTDIR)$(PREFIX)/share/libception/harness
else
	rm -rf $(DESTDIR)$(PREFIX)/share/libception/harness
	cp -r harness $(DESTDIR)$(PREFIX)/share/libception/harness
	find $(DESTDIR)$(PREFIX)/share/libception/harness -name __pycache__ -prune -exec rm -rf {} +
endif

deps:
	scripts/install-deps.sh

# C unit tests of each component, without the system-level suite.
check: all
	for c in common $(COMPONENTS); do $(MAKE) -C $$c check || exit 1; done

test: deps
	$(MAKE) all WERROR=1
	tests/run

fuzz:
	$(MAKE) -C receptiond fuzz

demo: deps all
	build/bin/libception bench demo

clean:
	for c in common $(COMPONENTS); do $(MAKE) -C $$c clean; done
	rm -rf build
