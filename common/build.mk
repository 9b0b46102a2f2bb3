# build.mk - settings shared by every component's Makefile.
# Each component Makefile sets TOP (the repository root) and includes this.
CC      ?= cc
CFLAGS  ?= -O2 -g
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR   = $(DESTDIR)$(PREFIX)/bin
LIBDIR   = $(DESTDIR)$(PREFIX)/lib
SHAREDIR = $(DESTDIR)$(PREFIX)/share/libception

# Warnings are errors when WERROR=1 (make test sets it), so a fresh
# compiler's new warning does not break a user's plain `make`.
WARN = -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror)
# One version for every program (--version): the file VERSION at the top.
LC_VERSION := $(shell cat $(TOP)/VERSION)
# Debug info names sources relative to the top, not this build tree, so an
# installed binary (or a .deb) carries no path of the machine it was built on.
PREFIX_MAP = -ffile-prefix-map=$(abspath $(TOP))=.
# A packager's CPPFLAGS and LDFLAGS too (-D_FORTIFY_SOURCE, -Wl,-z,relro):
# programs are compiled and linked in one command (gcc -c ignores LDFLAGS).
LC_CFLAGS = -std=gnu11 -D_GNU_SOURCE $(WARN) -I$(TOP)/common -DLC_VERSION='"$(LC_VERSION)"' \
            $(PREFIX_MAP) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)
