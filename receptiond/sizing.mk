# sizing.mk - the prefetch-sizing pieces of receptiond (issue 6): the
# policies, the accounting they share, the profile loader and the
# receptiond-profile measuring tool.  Included by receptiond/Makefile;
# also usable alone: make -C receptiond -f sizing.mk [check]
TOP ?= ..
include $(TOP)/common/build.mk

# Linked into receptiond (the daemon's Makefile adds these to its objects).
SIZING_SRCS = policy_competitive.c policy_adaptive.c policy_bitrate.c sizing_base.c \
              sizing_args.c sizing_stream.c sizing_account.c sizing_profile.c
SIZING_HDRS = sizing.h

receptiond-profile: profile.c
	$(CC) $(LC_CFLAGS) -o $@ profile.c -lpthread -lm

receptiond-profile: sizing.h

# Unit tests of the policies on synthetic inputs (no daemon, no real time);
# tests/sizing_stubs.c stands in for the daemon's log and json.
tests/test_sizing: tests/test_sizing.c tests/sizing_stubs.c $(SIZING_SRCS) $(SIZING_HDRS) policy.h util.c json.c
	$(CC) $(LC_CFLAGS) -I. -o $@ tests/test_sizing.c tests/sizing_stubs.c $(SIZING_SRCS) util.c json.c -lm

sizing-all: receptiond-profile
sizing-check: tests/test_sizing
	./tests/test_sizing
sizing-install: receptiond-profile
	install -d $(BINDIR)
	install -m 755 receptiond-profile $(BINDIR)/receptiond-profile
sizing-clean:
	rm -f receptiond-profile tests/test_sizing

.PHONY: sizing-all sizing-check sizing-install sizing-clean
