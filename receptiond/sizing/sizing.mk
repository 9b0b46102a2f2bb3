# sizing/sizing.mk - the prefetch-size policies of receptiond (issue 6):
# the policy table and the fixed policy, the sizing policies and the
# accounting they share, the profile loader, and the receptiond-profile
# measuring tool.  Included by receptiond/Makefile (paths are relative to
# receptiond/); also usable alone: make -C receptiond -f sizing/sizing.mk [sizing-check]
TOP ?= ..
include $(TOP)/common/build.mk

SZ = sizing
# The adaptive policy's parts, by concern (reading order: adaptive.h).
ADAPTIVE_SRCS = $(addprefix $(SZ)/adaptive_,decide.c groups.c score.c margin.c evict.c aa.c \
                  config.c report.c)
# Linked into receptiond (the daemon's Makefile adds these to its sources).
SIZING_SRCS = $(SZ)/policy.c $(SZ)/policy_fixed.c $(SZ)/policy_competitive.c \
              $(SZ)/policy_adaptive.c $(ADAPTIVE_SRCS) $(SZ)/policy_bitrate.c $(SZ)/sizing_base.c \
              $(SZ)/sizing_args.c $(SZ)/sizing_stream.c $(SZ)/sizing_account.c \
              $(SZ)/sizing_profile.c
SIZING_HDRS = $(wildcard $(SZ)/*.h)

PROFILE_SRCS = $(addprefix $(SZ)/,profile.c profile_space.c profile_probe.c)
receptiond-profile: $(PROFILE_SRCS) $(SZ)/profile.h $(SZ)/sizing.h
	$(CC) $(LC_CFLAGS) -o $@ $(PROFILE_SRCS) -lpthread -lm

# Unit tests of the policies on synthetic inputs (no daemon, no real time);
# sizing/tests/sizing_stubs.c stands in for the daemon's log.
SIZING_TESTS = $(addprefix $(SZ)/tests/,test_sizing.c test_streams.c model.c test_adaptive.c sizing_stubs.c)
$(SZ)/tests/test_sizing: $(SIZING_TESTS) $(SZ)/tests/test_sizing.h $(SIZING_SRCS) $(SIZING_HDRS) util.c json.c json.h
	$(CC) $(LC_CFLAGS) -I. -I$(SZ) -o $@ $(SIZING_TESTS) $(filter-out $(SZ)/policy.c $(SZ)/policy_fixed.c,$(SIZING_SRCS)) \
	      util.c json.c -lm

sizing-all: receptiond-profile
sizing-check: $(SZ)/tests/test_sizing
	./$(SZ)/tests/test_sizing
sizing-install: receptiond-profile
	install -d $(BINDIR)
	install -m 755 receptiond-profile $(BINDIR)/receptiond-profile
sizing-clean:
	rm -f receptiond-profile $(SZ)/tests/test_sizing

.PHONY: sizing-all sizing-check sizing-install sizing-clean
