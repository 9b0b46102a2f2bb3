# libception - top-level build.
#   make                      build everything into build/ (same layout as an install)
#   make install PREFIX=DIR   install bin/, lib/, share/ and the systemd units under DIR, and
#                             /etc/libception/receptiond.conf if absent (honours DESTDIR)
#   make test                 install what the tests need (Debian 12, as root), build, run all tests
#   make demo                 the one-command benchmark: nginx vs nginx under libception on an emulated disk
#   make deb                  a Debian package in build/deb (debhelper)
#   make fuzz                 fuzz receptiond's message path for FUZZ_S seconds (default 600; libFuzzer)
PREFIX     ?= /usr/local
# receptiond reads /etc/libception/receptiond.conf wherever it is installed;
# the build tree keeps its own copy (build/etc) and never touches /etc.
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
COMPONENTS  = preload receptiond hddsim vidload
BUILD       = $(CURDIR)/build

# Man pages, made from their docs/ pages (scripts/mkman.sh): one text.
MAN1 = libception hddsim hddsim-mkdisk vidload receptiond-profile
MAN7 = libception-watch libception-security
MAN8 = receptiond libception.so
MANPAGES = $(MAN1:%=$(BUILD)/man/%.1) $(MAN7:%=$(BUILD)/man/%.7) $(MAN8:%=$(BUILD)/man/%.8)

.PHONY: all $(COMPONENTS) man install test check demo deps deb clean fuzz

all: $(COMPONENTS) man
	@$(MAKE) --no-print-directory install PREFIX=$(BUILD) SYSCONFDIR=$(BUILD)/etc DESTDIR= \
	        LINK_HARNESS=1 >/dev/null

$(COMPONENTS):
	$(MAKE) -C $@

man: $(MANPAGES)

$(BUILD)/man/%.1 $(BUILD)/man/%.7 $(BUILD)/man/%.8: docs/%.md scripts/mkman.sh VERSION
	@mkdir -p $(@D)
	scripts/mkman.sh $< $@

install: $(COMPONENTS) man
	for c in $(COMPONENTS); do $(MAKE) -C $$c install PREFIX=$(PREFIX) || exit 1; done
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/libception
	install -m 755 harness/bin/libception $(DESTDIR)$(PREFIX)/bin/libception
	install -m 644 VERSION $(DESTDIR)$(PREFIX)/share/libception/VERSION
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7 \
	           $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 644 $(filter %.1,$(MANPAGES)) $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 $(filter %.7,$(MANPAGES)) $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 644 $(filter %.8,$(MANPAGES)) $(DESTDIR)$(PREFIX)/share/man/man8
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/libception
	sed 's|@BINDIR@|$(PREFIX)/bin|' receptiond/systemd/receptiond.service.in \
	    > $(DESTDIR)$(UNITDIR)/receptiond.service
	install -m 644 receptiond/systemd/receptiond.socket $(DESTDIR)$(UNITDIR)/receptiond.socket
	@# an operator's settings are never overwritten
	[ -e $(DESTDIR)$(SYSCONFDIR)/libception/receptiond.conf ] || \
	    install -m 644 receptiond/receptiond.conf $(DESTDIR)$(SYSCONFDIR)/libception/receptiond.conf
ifeq ($(LINK_HARNESS),1)
	@# a copy left by `make install PREFIX=build` would take the link inside it
	[ -L $(DESTDIR)$(PREFIX)/share/libception/harness ] || rm -rf $(DESTDIR)$(PREFIX)/share/libception/harness
	ln -sfn $(CURDIR)/harness $(DESTDIR)$(PREFIX)/share/libception/harness
else
	rm -rf $(DESTDIR)$(PREFIX)/share/libception/harness
	cp -r harness $(DESTDIR)$(PREFIX)/share/libception/harness
	find $(DESTDIR)$(PREFIX)/share/libception/harness -name __pycache__ -prune -exec rm -rf {} +
endif

# The package is built from a clean copy of the tree (build/deb/src), with
# Debian's compiler flags, so the working tree's build is left alone; the
# .deb, .buildinfo and .changes land in build/deb.  The changelog is
# written here, from VERSION.
DEB_DIR = $(BUILD)/deb
deb:
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	tar --exclude=./build --exclude=./results --exclude=./.git --exclude=__pycache__ -cf - . \
	    | tar -C $(DEB_DIR)/src -xf -
	$(MAKE) -s -C $(DEB_DIR)/src clean >/dev/null
	printf 'libception (%s) unstable; urgency=medium\n\n  * Built by make deb.\n\n -- %s  %s\n' \
	    "$$(cat VERSION)" "$$(sed -n 's/^Maintainer: //p' debian/control)" "$$(date -R)" \
	    > $(DEB_DIR)/src/debian/changelog
	cd $(DEB_DIR)/src && dpkg-buildpackage -b -us -uc --no-sign >../build.log 2>&1 \
	    || { tail -n 30 ../build.log; exit 1; }
	@ls $(DEB_DIR)/*.deb

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
