# gpuspy: `make` builds lib/libgpuspy.so and tools/gpuspy; `make test` runs
# every test that needs no GPU; `make bench` measures the cost per call.
CUDA_HOME ?= /usr/local/cuda
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
VERSION := 0.1.0
SOVERSION := 0

WARN := -Wall -Wextra -Wshadow -Wconversion -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-sign-conversion
CFLAGS ?= -O2 -g
BASE_CFLAGS := -std=c11 $(WARN) -Iinclude -I$(CUDA_HOME)/include
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

LIB_SRCS := lib/core.c lib/writer.c lib/memmap.c lib/symbols.c lib/devices.c lib/hook_alloc.c \
	lib/hook_memcpy.c lib/hook_memset.c lib/hook_launch.c lib/hook_graph.c lib/hook_sync.c lib/phase.c lib/control.c lib/nvtx.c lib/python.c lib/cupti.c lib/signals.c \
	lib/stacks.c lib/hook_host.c lib/gpu_events.c lib/options.c lib/pyframes.c lib/nvml.c
LIB_OBJS := $(LIB_SRCS:.c=.o)
LIB_REAL := lib/libgpuspy.so.$(VERSION)
LIB_SONAME := libgpuspy.so.$(SOVERSION)
LIB_LDFLAGS = -shared -Wl,-soname,$(LIB_SONAME) -Wl,--version-script=lib/libgpuspy.map \
	-Wl,-z,defs -Wl,--no-undefined-version

TOOL_SRCS := tools/gpuspy.c tools/collectives.c tools/control.c tools/reader.c tools/dump.c tools/input.c tools/report.c tools/report_merge.c tools/report_graph.c tools/telemetry.c \
	tools/diagnose.c tools/report_print.c tools/report_json.c tools/units.c tools/export.c tools/run.c tools/demangle.c tools/symbolize.c tools/sites.c tools/escape.c tools/files.c tools/cuda_errors.c tools/env.c tools/memory.c tools/frameworks.c tools/series.c tools/report_html.c \
	tools/follow.c tools/watch.c tools/top.c tools/serve.c tools/paths.c tools/diff.c tools/report_ranks.c
TOOL_OBJS := $(TOOL_SRCS:.c=.o) tools/options.o tools/html_assets.o
TOOL_LIBS = $(CJSON_LIBS) $(DW_LIBS) $(CURSES_LIBS) $(MHD_LIBS) -lstdc++ -lm

HEADERS := include/gpuspy/format.h include/gpuspy/apis.h include/gpuspy.h lib/gs.h lib/cuda_api.h lib/host.h lib/options.h lib/module.h lib/gpu_timing.h lib/stacks.h lib/host_alloc.h lib/writer.h lib/symbols.h lib/phase.h lib/memmap.h lib/pyframes.h

LIB_HOST := lib/libgpuspy-host.so
LIB_HOST_REAL := lib/libgpuspy-host.so.$(VERSION)

all: libs tools/gpuspy

# The libraries alone (what the GPU scripts build there).
libs: lib/libgpuspy.so $(LIB_HOST)

lib/%.o: lib/%.c $(HEADERS)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(LIB_CFLAGS) -c $< -o $@

lib/mkmap: lib/mkmap.c include/gpuspy/format.h include/gpuspy/apis.h
	$(Q)$(CC) $(BASE_CFLAGS) $< -o $@

lib/libgpuspy.map: lib/mkmap include/gpuspy/format.h include/gpuspy/apis.h
	$(Q)./lib/mkmap > $@

$(LIB_REAL): $(LIB_OBJS) lib/libgpuspy.map
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(LIB_LDFLAGS) -o $@ $(LIB_OBJS) -ldl -lpthread

lib/libgpuspy.so: $(LIB_REAL)
	$(Q)ln -sf libgpuspy.so.$(VERSION) lib/$(LIB_SONAME)
	$(Q)ln -sf libgpuspy.so.$(VERSION) $@

# Each of the shim's functions must stay one jump (no frame of its own in a
# call stack), whatever CFLAGS says: -O2 after it turns sibling calls on.
lib/host_shim.o: lib/host_shim.c lib/host.h
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

tools/%.o: tools/%.c include/gpuspy/format.h include/gpuspy/apis.h tools/reader.h tools/dump.h tools/input.h \
		tools/report.h tools/units.h tools/export.h tools/run.h tools/cli.h tools/demangle.h tools/symbolize.h tools/sites.h tools/xalloc.h tools/escape.h tools/files.h tools/cuda_errors.h tools/env.h tools/memory.h tools/series.h lib/options.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(BASE_CFLAGS) -D_GNU_SOURCE -DGPUSPY_PREFIX='"$(PREFIX)"' $(CJSON_CFLAGS) -c $< -o $@

# The HTML report's page script, style and the vendored uPlot, as strings.
tools/html_assets.o: tools/html_assets.S tools/html/page.js tools/html/page.css tools/html/uplot/uPlot.iife.min.js \
		tools/html/uplot/uPlot.min.css
	@echo "  AS      $@"
	$(Q)$(CC) -c $< -o $@

# The options table and its parser, shared with the library.
tools/options.o: lib/options.c lib/options.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(BASE_CFLAGS) -c $< -o $@

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
	rm -f lib/*.o lib/mkmap lib/libgpuspy.map lib/libgpuspy-host.map lib/libgpuspy.so* lib/libgpuspy-host.so* tools/*.o tools/gpuspy
	rm -rf $(TEST_CLEAN)

.PHONY: all libs install clean wheel-stage
