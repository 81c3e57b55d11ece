# Test doubles and test programs; `make test` runs tests/run.py on them.
# The programs are found by folder (tests/progs/prog_*.c and
# tests/hostile/prog_*.c, each tests/bin/prog_NAME on the driver double);
# what needs more (other flags, the runtime double, a library of its own)
# has a rule of its own below. Headers are tracked as the Makefile tracks
# them (-MMD -MP: a .d file beside each output in tests/bin), so no header
# list is kept by hand.
TB := tests/bin
TEST_CFLAGS := $(CFLAGS) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
	-Iinclude -I$(CUDA_HOME)/include -Itests $(DEPFLAGS)
TEST_CLEAN := $(TB) tests/out
-include $(wildcard $(TB)/*.d $(TB)/*/*.d $(TB)/*/*/*.d)

# ---- the doubles ------------------------------------------------------------

# The driver double: its entry points, its copies and memsets, its graphs,
# its streams, its cuGetProcAddress.
# Built three ways, each from objects of its own: the plain one, and the
# two of the hostile tests (tests/bin/mirror, tests/bin/proctool).
FAKE_DRIVER := tests/doubles/fakecuda.c tests/doubles/fakecopy.c tests/doubles/fakegraph.c tests/doubles/fakestream.c \
	tests/doubles/fakeproc.c
driver_objs = $(patsubst tests/doubles/%.c,$(TB)/obj/$(1)/%.o,$(FAKE_DRIVER))
$(TB)/obj/driver/%.o: tests/doubles/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -c -o $@ $<
$(TB)/obj/mirror/%.o: tests/doubles/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(TEST_CFLAGS) -DMIRROR_PROCS -fPIC -c -o $@ $<
$(TB)/obj/proctool/%.o: tests/doubles/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(TEST_CFLAGS) -DPROC_TOOL -fPIC -c -o $@ $<

$(TB)/libcuda.so.1: $(call driver_objs,driver)
	@echo "  LD      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $^ -lpthread

$(TB)/libcuda.so: $(TB)/libcuda.so.1
	$(Q)ln -sf libcuda.so.1 $@

$(TB)/libcupti.so.13: tests/doubles/fakecupti.c
	@mkdir -p $(TB)
	@echo "  CC      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,-soname,libcupti.so.13 -o $@ $< -ldl -lpthread

# NVML's double in a folder of its own: only the telemetry tests put it on
# the library path, so other tests' traces hold no samples.
$(TB)/nvml/libnvidia-ml.so.1: tests/doubles/fakenvml.c
	@mkdir -p $(TB)/nvml
	@echo "  CC      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $<

$(TB)/libcudart.so.13: tests/doubles/fakecudart.c tests/doubles/libcudart.map
	@mkdir -p $(TB)
	@echo "  CC      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,-soname,libcudart.so.13 \
		-Wl,--version-script=tests/doubles/libcudart.map -o $@ $< -ldl -lpthread

$(TB)/fakecudart_static.o: tests/doubles/fakecudart.c
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -fvisibility=hidden -c -o $@ $<

$(TB)/libfakecudart_static.a: $(TB)/fakecudart_static.o
	$(Q)ar rcs $@ $<

RT_DYN := -L$(TB) -l:libcudart.so.13 -Wl,-rpath,'$$ORIGIN'
DRV := -L$(TB) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'

# ---- the programs -----------------------------------------------------------

# Each tests/progs/prog_NAME.c and tests/hostile/prog_NAME.c is
# tests/bin/prog_NAME, linked with the driver double, and with glibc's
# libdl or libpthread where WITH_DL or WITH_PTHREAD names it.
WITH_DL := prog_nvtx prog_load prog_window prog_loader_lock prog_routes prog_notes
WITH_PTHREAD := prog_devices prog_threads prog_ranks prog_events prog_nvtx prog_life prog_load prog_loader_lock \
	prog_fork_busy prog_threads_many prog_thread_stacks prog_rawfork prog_live prog_cancel
prog_libs = $(strip $(DRV) $(if $(filter $(@F),$(WITH_DL)),-ldl) $(if $(filter $(@F),$(WITH_PTHREAD)),-lpthread))
$(TB)/prog_%: tests/progs/prog_%.c $(TB)/libcuda.so.1
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(prog_libs)
$(TB)/prog_%: tests/hostile/prog_%.c $(TB)/libcuda.so.1
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(prog_libs)

# tests/progs/prog_rt*.c call the runtime: each is built four ways, on the
# shared runtime double or the static one (prog_rt_dyn, prog_rt_static),
# each also with per-thread default streams (prog_rt_dyn_ptds, ...).
RT_SRCS := $(wildcard tests/progs/prog_rt*.c)
RT_PROGS := $(foreach p,$(RT_SRCS:tests/progs/%.c=$(TB)/%),$(p)_dyn $(p)_dyn_ptds $(p)_static $(p)_static_ptds)
$(filter %_dyn,$(RT_PROGS)): $(TB)/%_dyn: tests/progs/%.c $(TB)/libcudart.so.13
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(RT_DYN)
$(filter %_dyn_ptds,$(RT_PROGS)): $(TB)/%_dyn_ptds: tests/progs/%.c $(TB)/libcudart.so.13
	$(Q)$(CC) $(TEST_CFLAGS) -DPTDS -o $@ $< $(RT_DYN)
$(filter %_static,$(RT_PROGS)): $(TB)/%_static: tests/progs/%.c $(TB)/libfakecudart_static.a
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(TB)/libfakecudart_static.a -ldl -lpthread
$(filter %_static_ptds,$(RT_PROGS)): $(TB)/%_static_ptds: tests/progs/%.c $(TB)/libfakecudart_static.a
	$(Q)$(CC) $(TEST_CFLAGS) -DPTDS -o $@ $< $(TB)/libfakecudart_static.a -ldl -lpthread

# The exceptions of tests/progs: the driver scenario with per-thread
# streams too; the runtime looked up by dlsym; the call stacks' program,
# whose frames and lines the tests know (-O1 -g), on either runtime; the
# faulting kernel's (-O1 -g too, on the runtime, with a stand-in for
# the runtime linked in, -g0); the codec's, which needs
# no double; the one that must not be linked with CUDA at all; and the
# tools that are no prog_*.
$(TB)/prog_drv_ptds: tests/progs/prog_drv.c $(TB)/libcuda.so.1
	$(Q)$(CC) $(TEST_CFLAGS) -DPTDS -o $@ $< $(DRV)
$(TB)/prog_dlsym: tests/progs/prog_dlsym.c $(TB)/libcudart.so.13 $(TB)/libcuda.so.1
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(RT_DYN) -ldl
$(TB)/prog_stacks: tests/progs/prog_stacks.c $(TB)/libcudart.so.13
	$(Q)$(CC) $(TEST_CFLAGS) -O1 -g -o $@ $< $(RT_DYN) -lpthread -ldl
$(TB)/prog_stacks_static: tests/progs/prog_stacks.c $(TB)/libfakecudart_static.a
	$(Q)$(CC) $(TEST_CFLAGS) -O1 -g -o $@ $< $(TB)/libfakecudart_static.a -ldl -lpthread
$(TB)/prog_fault: tests/progs/prog_fault.c $(TB)/fault_rt.o $(TB)/libcudart.so.13
	$(Q)$(CC) $(TEST_CFLAGS) -O1 -g -o $@ $< $(TB)/fault_rt.o $(RT_DYN)
$(TB)/fault_rt.o: tests/progs/fault_rt.c
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -O1 -g0 -c -o $@ $<
$(TB)/prog_codec: tests/progs/prog_codec.c
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $<
$(TB)/prog_nocuda: tests/progs/prog_nocuda.c
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< -ldl
$(TB)/fork_delay.so: tests/progs/fork_delay.c
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -shared -fPIC -o $@ $< -ldl
$(TB)/mktrace: tests/progs/mktrace.c
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -O2 -o $@ $<

TEST_PROGS := $(patsubst tests/progs/%.c,$(TB)/%,$(filter-out $(RT_SRCS),$(wildcard tests/progs/prog_*.c))) \
	$(RT_PROGS) $(addprefix $(TB)/,prog_drv_ptds prog_stacks_static fork_delay.so mktrace)

# Hostile and unusual programs (tests/hostile, tests/test_hostile*.py): the
# exceptions. prog_signals faults on purpose: never instrumented (a
# sanitizer would report the fault). prog_longjmp calls the runtime too;
# prog_ctor and prog_dtor link a library whose constructor or destructor
# makes CUDA calls.
$(TB)/prog_signals: tests/hostile/prog_signals.c $(TB)/libcuda.so.1
	$(Q)$(CC) $(TEST_CFLAGS) -O0 -fno-sanitize=all -o $@ $< $(DRV)
$(TB)/prog_longjmp: tests/hostile/prog_longjmp.c $(TB)/libcuda.so.1 $(TB)/libcudart.so.13
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) $(RT_DYN)
$(TB)/prog_ctor: tests/hostile/prog_ctor.c $(TB)/libhostile_ctor.so
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< -L$(TB) -Wl,--no-as-needed -l:libhostile_ctor.so $(RT_DYN)
$(TB)/prog_dtor: tests/hostile/prog_dtor.c $(TB)/libhostile_dtor.so
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< -L$(TB) -Wl,--no-as-needed -l:libhostile_dtor.so $(RT_DYN)

# The hostile libraries, each of one file: linked by a program (ctor, dtor)
# or preloaded by a test.
$(TB)/libhostile_ctor.so: tests/hostile/ctor_lib.c $(TB)/libcudart.so.13
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< $(RT_DYN)
$(TB)/libhostile_dtor.so: tests/hostile/dtor_lib.c $(TB)/libcudart.so.13
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< $(RT_DYN) -lpthread
$(TB)/libhostile_loader_lock.so: tests/hostile/loader_lock_lib.c
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $<
$(TB)/libhostile_interposer.so: tests/hostile/interposer.c
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< -ldl
$(TB)/libcount_backtrace.so: tests/hostile/count_backtrace.c
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< -ldl
$(TB)/libhostile_slow_cupti.so: tests/hostile/slow_cupti.c
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< -ldl
$(TB)/libhostile_nothreads.so: tests/hostile/nothreads.c
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $<
$(TB)/libhostile_cut_on_map.so: tests/hostile/cut_on_map.c
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -shared -fPIC -o $@ $< -ldl

# The driver double mirroring cuGetProcAddress's answers, and the one that
# answers as a profiler injected into the driver would (tests/bin/proctool).
$(TB)/mirror/libcuda.so.1: $(call driver_objs,mirror)
	@mkdir -p $(TB)/mirror
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $^ -ldl -lpthread
$(TB)/proctool/libcuda.so.1: $(call driver_objs,proctool)
	@mkdir -p $(TB)/proctool
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 -o $@ $^ -ldl -lpthread

HOSTILE_PROGS := $(patsubst tests/hostile/%.c,$(TB)/%,$(wildcard tests/hostile/prog_*.c)) \
	$(addprefix $(TB)/,libhostile_ctor.so libhostile_dtor.so libhostile_loader_lock.so libhostile_interposer.so \
	libcount_backtrace.so libhostile_slow_cupti.so libhostile_nothreads.so libhostile_cut_on_map.so \
	mirror/libcuda.so.1 proctool/libcuda.so.1)

# Unit tests of the report's arithmetic (tests/unit/, run by tests/test_advice.py):
# two sources in one command, so period.h, which both read, is named here.
$(TB)/unit_period: tests/unit/period_test.c tools/report/period.c tools/report/period.h
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -Itools -o $@ tests/unit/period_test.c tools/report/period.c

test-build: all $(TB)/libcuda.so.1 $(TB)/libcuda.so $(TB)/libcudart.so.13 $(TB)/libcupti.so.13 $(TB)/nvml/libnvidia-ml.so.1 \
	$(TEST_PROGS) $(HOSTILE_PROGS) $(TB)/unit_period $(TB)/bench_call

deps:
	@sh scripts/deps.sh

# One target per topic (tests/test_TOPIC.py), TEST_JOBS at a time (default:
# one per core), each printing its own results in one piece (-O); -k runs
# every topic even after one fails.
TEST_TOPICS := $(patsubst tests/test_%.py,%,$(wildcard tests/test_*.py))
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)

test: deps
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) test-build examples
	@$(MAKE) --no-print-directory -k -O -j$(TEST_JOBS) $(TEST_TOPICS:%=test-topic-%)
	@echo "all $(words $(TEST_TOPICS)) test topics passed"

test-topic-%:
	@echo "== tests/test_$*.py"
	@python3 tests/run.py --topic $*

# The long scale tests (@slow in tests/: threads by the dozen, forks and
# header writes in a loop) that `make test` leaves out; test-all is both.
test-slow: deps
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) test-build examples
	@python3 tests/run.py -j$(TEST_JOBS) --slow

test-all: test test-slow

.PHONY: test test-build test-slow test-all deps

$(TB)/bench_call: bench/bench_call.c $(TB)/libcuda.so.1 $(TB)/libcudart.so.13
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) $(RT_DYN) -lpthread

bench: deps
	@$(MAKE) --no-print-directory all $(TB)/bench_call
	python3 bench/run.py

.PHONY: bench

# What tests/gpu/run.sh needs from this machine: the gpuspy command and the
# cJSON library it links (the GPU image has no cJSON).
# Libraries the GPU image may lack, for tools/gpuspy (cJSON, elfutils) and for
# libgpuspy's call stacks (libunwind, dlopen'ed): carried in .gpu/lib.
gpu-carry: tools/gpuspy
	@mkdir -p .gpu/lib
	@for l in $(GPU_CARRY_LIBS); do \
		cp -L $$(ldconfig -p | awk -v l="$$l" '$$1 == l {print $$NF; exit}') .gpu/lib/$$l || exit 1; \
	done

.PHONY: gpu-carry

demo:
	@sh scripts/demo.sh

# The Debian package and the Python wheel, built, installed apart and
# checked by running the demo with each (scripts/packages.sh); left in dist/.
packages:
	@sh scripts/packages.sh

.PHONY: demo packages

# Refreshes the expected reports of the golden traces (review the diff).
golden-update: all
	@for f in tests/golden/*.jsonl; do \
		b=$${f%.jsonl}; \
		tools/gpuspy report --color never $$f > $$b.report.txt; \
		tools/gpuspy report --json $$f > $$b.report.json; \
	done

.PHONY: golden-update

# Reader speed: `gpuspy report` on a synthetic 10-million-event trace, one core.
bench-report: all $(TB)/mktrace
	python3 bench/report_speed.py
.PHONY: bench-report

# Fuzzing the trace parsers (libFuzzer, clang). New inputs go to a scratch
# directory; the committed seed corpus is tests/fuzz/corpus.
FUZZ_SECONDS ?= 60
FUZZ_SRCS := tests/fuzz/fuzz_trace.c common/options.c $(filter-out tools/gpuspy.c tools/cmd/% tools/render/html.c,$(TOOL_SRCS))
$(TB)/fuzz_trace: $(FUZZ_SRCS) $(wildcard tools/*/*.h) include/gpuspy/format.h
	@mkdir -p $(TB)
	clang -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -I$(CUDA_HOME)/include \
		-Icommon -Itools -DGPUSPY_VERSION='"$(VERSION)"' $(CJSON_CFLAGS) -o $@ $(FUZZ_SRCS) $(CJSON_LIBS) $(DW_LIBS) -lstdc++ -lm

fuzz: $(TB)/fuzz_trace
	@mkdir -p tests/out/fuzz-new
	$(TB)/fuzz_trace -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -timeout=10 \
		tests/out/fuzz-new tests/fuzz/corpus

.PHONY: fuzz

# The CUDA C examples, built by nvcc against the shared runtime; in CI they
# run on the doubles (tests/doubles/fakecudart.c implements the registration
# and launch entry points nvcc's host code calls).
NVCC ?= $(CUDA_HOME)/bin/nvcc
EXAMPLES := pinned_vs_pageable data_starved alloc_churn static_launches
$(TB)/ex_%: examples/%.cu include/gpuspy.h
	@mkdir -p $(TB)
	@echo "  NVCC    $@"
	$(Q)$(NVCC) -O2 -cudart shared -Iinclude -o $@ $<

examples: $(addprefix $(TB)/ex_,$(EXAMPLES))
.PHONY: examples

check-sanitize: deps
	@sh scripts/check-sanitize.sh
.PHONY: check-sanitize
