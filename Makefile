# gpuspy: `make` builds lib/libgpuspy.so and tools/gpuspy; `make test` runs
# every test that needs no GPU; `make bench` measures the cost per call.
CUDA_HOME ?= /usr/local/cuda
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
# The one place the version is written (tests/test_house.py ties the
# copies that cannot read it: include/gpuspy.h, debian/changelog,
# python/gpuspy/__init__.py).
VERSION := $(shell cat VERSION)
SOVERSION := 0

WARN := -Wall -Wextra -Wshadow -Wconversion -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-sign-conversion
CFLAGS ?= -O2 -g
# -MMD -MP: every object gets a .d file of the headers it read, so editing
# any header rebuilds exactly its users (no header lists kept by hand).
DEPFLAGS := -MMD -MP
BASE_CFLAGS := -std=c11 $(WARN) -Iinclude -Icommon -I$(CUDA_HOME)/include $(DEPFLAGS)
LIB_CFLAGS := $(BASE_CFLAGS) -fPIC -fvisibility=hidden -mtls-dialect=gnu2 -falign-functions=64
CJSON_CFLAGS := $(shell pkg-config --cflags libcjson 2>/dev/null || echo -I/usr/include/cjson)
CJSON_LIBS := $(shell pkg-config --libs libcjson 2>/dev/null || echo -lcjson)
DW_LIBS := $(shell pkg-config --libs libdw 2>/dev/null || echo -ldw -lelf)
CURSES_LIBS := $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw -ltinfo)
MHD_LIBS := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)

ifeq ($(V),1)
Q :=
else
Q := @
endif

# The preload library: every lib/*.c but the host shim (its own library)
# and mkmap (a build tool), plus common/.
LIB_SRCS := $(filter-out lib/host_shim.c lib/mkmap.c,$(wildcard lib/*.c)) common/options.c
LIB_OBJS := $(patsubst common/%.o,lib/common_%.o,$(LIB_SRCS:.c=.o))
LIB_REAL := lib/libgpuspy.so.$(VERSION)
LIB_SONAME := libgpuspy.so.$(SOVERSION)
LIB_LDFLAGS = -shared -Wl,-soname,$(LIB_SONAME) -Wl,--version-script=lib/libgpuspy.map \
	-Wl,-z,defs -Wl,--no-undefined-version

# The gpuspy command: main and its rooms (docs/hacking.md), plus common/.
TOOL_ROOMS := cmd read report render util
TOOL_SRCS := tools/gpuspy.c $(foreach d,$(TOOL_ROOMS),$(wildcard tools/$(d)/*.c))
TOOL_OBJS := $(TOOL_SRCS:.c=.o) tools/common_options.o tools/render/html_assets.o
TOOL_LIBS = $(CJSON_LIBS) $(DW_LIBS) $(CURSES_LIBS) $(MHD_LIBS) -lstdc++ -lm
TOOL_CFLAGS = $(BASE_CFLAGS) -Itools -D_GNU_SOURCE -DGPUSPY_PREFIX='"$(PREFIX)"' \
	-DGPUSPY_VERSION='"$(VERSION)"' $(CJSON_CFLAGS)

LIB_HOST := lib/libgpuspy-host.so
LIB_HOST_REAL := lib/libgpuspy-host.so.$(VERSION)

# The .d files name targets of their own: the default goal stays `all`.
.DEFAULT_GOAL := all
DEPS := $(wildcard lib/*.d tools/*.d tools/*/*.d)
-include $(DEPS)

all: libs tools/gpuspy

# The libraries alone (what the GPU scripts build there).
libs: lib/libgpuspy.so $(LIB_HOST)

lib/%.o: lib/%.c
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(LIB_CFLAGS) -c $< -o $@

lib/common_%.o: common/%.c
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(LIB_CFLAGS) -c $< -o $@

lib/mkmap: lib/mkmap.c
	$(Q)$(CC) $(BASE_CFLAGS) $< -o $@

lib/libgpuspy.map: lib/mkmap
	$(Q)./lib/mkmap > $@

$(LIB_REAL): $(LIB_OBJS) lib/libgpuspy.map
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(LIB_LDFLAGS) -o $@ $(LIB_OBJS) -ldl -lpthread

lib/libgpuspy.so: $(LIB_REAL)
	$(Q)ln -sf libgpuspy.so.$(VERSION) lib/$(LIB_SONAME)
	$(Q)ln -sf libgpuspy.so.$(VERSION) $@

# Each of the shim's functions must stay one jump (no frame of its own in a
# call stack), whatever CFLAGS says: -O2 after it turns sibling calls on.
lib/host_shim.o: lib/host_shim.c
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(LIB_CFLAGS) -O2 -foptimize-sibling-calls -c $< -o $@

# The host allocator's names (malloc ... munmap), preloaded after libgpuspy
# only to record host allocations (lib/host_shim.c). It needs libgpuspy.so.0
# (found beside it, or the copy already preloaded).
lib/libgpuspy-host.map: lib/mkmap
	$(Q)./lib/mkmap host > $@

$(LIB_HOST_REAL): lib/host_shim.o lib/libgpuspy.so lib/libgpuspy-host.map
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libgpuspy-host.so.$(SOVERSION) \
		-Wl,--version-script=lib/libgpuspy-host.map -Wl,-z,now -Wl,-z,defs \
		-o $@ lib/host_shim.o -Llib -l:$(LIB_SONAME) -Wl,-rpath,'$$ORIGIN'

$(LIB_HOST): $(LIB_HOST_REAL)
	$(Q)ln -sf libgpuspy-host.so.$(VERSION) lib/libgpuspy-host.so.$(SOVERSION)
	$(Q)ln -sf libgpuspy-host.so.$(VERSION) $@

tools/%.o: tools/%.c
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(TOOL_CFLAGS) -c $< -o $@

# The options table and its parser, shared with the library.
tools/common_%.o: common/%.c
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(BASE_CFLAGS) -c $< -o $@

# The HTML report's page script, style and the vendored uPlot, as strings.
tools/render/html_assets.o: tools/render/html_assets.S $(wildcard tools/render/html/*.* tools/render/html/uplot/*)
	@echo "  AS      $@"
	$(Q)$(CC) -c $< -o $@

tools/gpuspy: $(TOOL_OBJS)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(TOOL_OBJS) $(TOOL_LIBS)

include tests/tests.mk

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(PREFIX)/include/gpuspy $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(LIB_REAL) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libgpuspy.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(LIB_SONAME)
	ln -sf libgpuspy.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libgpuspy.so
	install -m 755 $(LIB_HOST_REAL) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libgpuspy-host.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libgpuspy-host.so.$(SOVERSION)
	ln -sf libgpuspy-host.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libgpuspy-host.so
	install -m 755 tools/gpuspy $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions
	install -m 644 docs/gpuspy.1 $(DESTDIR)$(PREFIX)/share/man/man1/gpuspy.1
	tools/gpuspy help --bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/gpuspy
	tools/gpuspy help --zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_gpuspy
	install -m 644 include/gpuspy.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 include/gpuspy/format.h include/gpuspy/apis.h $(DESTDIR)$(PREFIX)/include/gpuspy/
	install -d $(DESTDIR)$(PREFIX)/share/gpuspy/python
	install -m 644 python/sitecustomize.py python/gpuspy_torch.py $(DESTDIR)$(PREFIX)/share/gpuspy/python/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' gpuspy.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/gpuspy.pc

# What the Python wheel holds under gpuspy/ (setup.py), in STAGE: the
# command, linked to find its libraries in ../lib; libgpuspy, linked to find
# libunwind beside it; libgpuspy-host; the libraries a GPU machine may lack
# (GPU_CARRY_LIBS: the command's cJSON, elfutils, ncurses and libmicrohttpd, libunwind); the PyTorch
# helper in python/.
GPU_CARRY_LIBS := libcjson.so.1 libdw.so.1 libelf.so.1 libbz2.so.1.0 libunwind.so.8 libncursesw.so.6 libmicrohttpd.so.12
wheel-stage: all
	@test -n "$(STAGE)" || { echo "wheel-stage: STAGE= is not set" >&2; exit 1; }
	@install -d $(STAGE)/bin $(STAGE)/lib $(STAGE)/python
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../lib' -o $(STAGE)/bin/gpuspy $(TOOL_OBJS) $(TOOL_LIBS)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(LIB_LDFLAGS) -Wl,-rpath,'$$ORIGIN' -o $(STAGE)/lib/$(LIB_SONAME) \
		$(LIB_OBJS) -ldl -lpthread
	@install -m 755 $(LIB_HOST_REAL) $(STAGE)/lib/libgpuspy-host.so
	@for l in $(GPU_CARRY_LIBS); do \
		cp -L $$(ldconfig -p | awk -v l="$$l" '$$1 == l {print $$NF; exit}') $(STAGE)/lib/$$l || exit 1; \
	done
	@install -m 644 python/sitecustomize.py python/gpuspy_torch.py $(STAGE)/python/

clean:
	rm -f lib/*.o lib/*.d lib/mkmap lib/libgpuspy.map lib/libgpuspy-host.map lib/libgpuspy.so* lib/libgpuspy-host.so*
	rm -f tools/*.o tools/*/*.o tools/*.d tools/*/*.d tools/gpuspy
	rm -rf $(TEST_CLEAN)

# What each target does (make help).
help:
	@echo "make              the library (lib/libgpuspy.so) and the command (tools/gpuspy)"
	@echo "make demo         installs what is missing, builds, traces an example and prints its report"
	@echo "make test         every test that needs no GPU, on the CUDA test doubles (the long ones aside)"
	@echo "make test-all     those and the long scale tests (test-slow: only those)"
	@echo "make test-topic-T one topic's tests (T: a tests/test_T.py); python3 tests/run.py NAME runs one test"
	@echo "make test-build   the doubles and test programs into tests/bin; examples: the examples/ programs"
	@echo "make deps         says which Debian packages are missing, then installs them"
	@echo "make check-sanitize  the tests under ASan+UBSan, then the threaded ones under TSan"
	@echo "make packages     the .deb and the Python wheel in dist/, each installed apart and tried"
	@echo "make install      into PREFIX (default /usr/local), honouring DESTDIR"
	@echo "make bench        the cost per call on the doubles; bench-report the report's speed"
	@echo "make fuzz         the trace parsers under libFuzzer (FUZZ_SECONDS=60)"
	@echo "make gpu-carry    the libraries the GPU machine lacks, into .gpu/lib"
	@echo "make golden-update  rewrites tests/golden/ from the current report (review the diff)"
	@echo "make clean        removes what the build made"
	@echo "V=1 shows the commands; CUDA_HOME, PREFIX, DESTDIR, CC and CFLAGS are honoured."

.PHONY: all libs install clean wheel-stage help
