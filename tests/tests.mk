# Test doubles and test programs; `make test` runs tests/run.py on them.
TB := tests/bin
TEST_CFLAGS := $(CFLAGS) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
	-Iinclude -I$(CUDA_HOME)/include -Itests
TEST_CLEAN := $(TB) tests/out
DOUBLE_HDRS := tests/doubles/fakecuda.h lib/cuda_api.h include/gpuspy/format.h include/gpuspy/apis.h tests/progs/prog_common.h

# The driver double: its entry points, its copies and memsets, its graphs.
FAKE_DRIVER := tests/doubles/fakecuda.c tests/doubles/fakecopy.c tests/doubles/fakegraph.c
$(TB)/libcuda.so.1: $(FAKE_DRIVER) tests/doubles/fakecuda_int.h $(DOUBLE_HDRS)
	@mkdir -p $(TB)
	@echo "  CC      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $(FAKE_DRIVER) -lpthread

$(TB)/libcupti.so.13: tests/doubles/fakecupti.c $(DOUBLE_HDRS)
	@mkdir -p $(TB)
	@echo "  CC      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,-soname,libcupti.so.13 -o $@ $< -ldl -lpthread

# NVML's double in a folder of its own: only the telemetry tests put it on
# the library path, so other tests' traces hold no samples.
$(TB)/nvml/libnvidia-ml.so.1: tests/doubles/fakenvml.c
	@mkdir -p $(TB)/nvml
	@echo "  CC      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $<

$(TB)/libcuda.so: $(TB)/libcuda.so.1
	$(Q)ln -sf libcuda.so.1 $@

$(TB)/libcudart.so.13: tests/doubles/fakecudart.c tests/doubles/libcudart.map $(DOUBLE_HDRS)
	@mkdir -p $(TB)
	@echo "  CC      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,-soname,libcudart.so.13 \
		-Wl,--version-script=tests/doubles/libcudart.map -o $@ $< -ldl -lpthread

$(TB)/fakecudart_static.o: tests/doubles/fakecudart.c $(DOUBLE_HDRS)
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -fvisibility=hidden -c -o $@ $<

$(TB)/libfakecudart_static.a: $(TB)/fakecudart_static.o
	$(Q)ar rcs $@ $<

RT_DYN := -L$(TB) -l:libcudart.so.13 -Wl,-rpath,'$$ORIGIN'
DRV := -L$(TB) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'

$(TB)/prog_rt_dyn: tests/progs/prog_rt.c $(TB)/libcudart.so.13 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(RT_DYN)
$(TB)/prog_rt_dyn_ptds: tests/progs/prog_rt.c $(TB)/libcudart.so.13 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -DPTDS -o $@ $< $(RT_DYN)
$(TB)/prog_rt_static: tests/progs/prog_rt.c $(TB)/libfakecudart_static.a $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(TB)/libfakecudart_static.a -ldl -lpthread
$(TB)/prog_rt_static_ptds: tests/progs/prog_rt.c $(TB)/libfakecudart_static.a $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -DPTDS -o $@ $< $(TB)/libfakecudart_static.a -ldl -lpthread
$(TB)/prog_rt_more_dyn: tests/progs/prog_rt_more.c $(TB)/libcudart.so.13 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(RT_DYN)
$(TB)/prog_rt_more_dyn_ptds: tests/progs/prog_rt_more.c $(TB)/libcudart.so.13 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -DPTDS -o $@ $< $(RT_DYN)
$(TB)/prog_rt_more_static: tests/progs/prog_rt_more.c $(TB)/libfakecudart_static.a $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(TB)/libfakecudart_static.a -ldl -lpthread
$(TB)/prog_rt_more_static_ptds: tests/progs/prog_rt_more.c $(TB)/libfakecudart_static.a $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -DPTDS -o $@ $< $(TB)/libfakecudart_static.a -ldl -lpthread
$(TB)/prog_drv: tests/progs/prog_drv.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV)
$(TB)/prog_drv_ptds: tests/progs/prog_drv.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -DPTDS -o $@ $< $(DRV)
$(TB)/prog_dlsym: tests/progs/prog_dlsym.c $(TB)/libcudart.so.13 $(TB)/libcuda.so.1 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(RT_DYN) -ldl
$(TB)/prog_devices: tests/progs/prog_devices.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -lpthread
$(TB)/prog_threads: tests/progs/prog_threads.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -lpthread
$(TB)/prog_kill: tests/progs/prog_kill.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV)
$(TB)/prog_fork: tests/progs/prog_fork.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV)
$(TB)/prog_graph: tests/progs/prog_graph.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV)

$(TB)/prog_stacks: tests/progs/prog_stacks.c $(TB)/libcudart.so.13 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -O1 -g -o $@ $< $(RT_DYN) -lpthread -ldl
$(TB)/prog_stacks_static: tests/progs/prog_stacks.c $(TB)/libfakecudart_static.a $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -O1 -g -o $@ $< $(TB)/libfakecudart_static.a -ldl -lpthread

$(TB)/prog_codec: tests/progs/prog_codec.c include/gpuspy/format.h
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $<

$(TB)/fork_delay.so: tests/progs/fork_delay.c
	$(Q)$(CC) $(TEST_CFLAGS) -shared -fPIC -o $@ $< -ldl

TEST_PROGS := $(addprefix $(TB)/,fork_delay.so prog_codec prog_stacks prog_stacks_static prog_rt_dyn prog_rt_dyn_ptds prog_rt_static prog_rt_static_ptds \
	prog_rt_more_dyn prog_rt_more_dyn_ptds prog_rt_more_static prog_rt_more_static_ptds \
	prog_drv prog_drv_ptds prog_graph prog_devices prog_dlsym prog_threads prog_kill prog_fork prog_train prog_nvtx prog_window prog_crash prog_life prog_load prog_events prog_ranks mktrace)

test-build: all $(TB)/libcuda.so.1 $(TB)/libcuda.so $(TB)/libcudart.so.13 $(TB)/libcupti.so.13 $(TB)/nvml/libnvidia-ml.so.1 $(TEST_PROGS)

deps:
	@sh scripts/deps.sh

# One target per topic (tests/test_TOPIC.py), TEST_JOBS at a time (default:
# one per core), each printing its own results in one piece (-O); -k runs
# every topic even after one fails.
TEST_TOPICS := $(patsubst tests/test_%.py,%,$(wildcard tests/test_*.py))
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)

test: deps
	@$(MAKE) --no-print-directory test-build examples
	@$(MAKE) --no-print-directory -k -O -j$(TEST_JOBS) $(TEST_TOPICS:%=test-topic-%)
	@echo "all $(words $(TEST_TOPICS)) test topics passed"

test-topic-%:
	@echo "== tests/test_$*.py"
	@python3 tests/run.py --topic $*

# The long scale tests (@slow in tests/: threads by the dozen, forks and
# header writes in a loop) that `make test` leaves out; test-all is both.
test-slow: deps
	@$(MAKE) --no-print-directory test-build examples
	@python3 tests/run.py -j$(TEST_JOBS) --slow

test-all: test test-slow

.PHONY: test test-build test-slow test-all deps

$(TB)/bench_call: bench/bench_call.c $(TB)/libcuda.so.1 $(TB)/libcudart.so.13 $(DOUBLE_HDRS)
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

$(TB)/prog_train: tests/progs/prog_train.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS) include/gpuspy.h
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV)

$(TB)/prog_ranks: tests/progs/prog_ranks.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS) include/gpuspy.h
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -lpthread

$(TB)/prog_events: tests/progs/prog_events.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS) include/gpuspy.h
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -lpthread

# Refreshes the expected reports of the golden traces (review the diff).
golden-update: all
	@for f in tests/golden/*.jsonl; do \
		b=$${f%.jsonl}; \
		tools/gpuspy report --color never $$f > $$b.report.txt; \
		tools/gpuspy report --json $$f > $$b.report.json; \
	done

.PHONY: golden-update

$(TB)/mktrace: tests/progs/mktrace.c include/gpuspy/format.h
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -O2 -o $@ $<

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
$(TB)/prog_nvtx: tests/progs/prog_nvtx.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -ldl -lpthread

$(TB)/prog_window: tests/progs/prog_window.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS) include/gpuspy.h
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -ldl

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
$(TB)/prog_crash: tests/progs/prog_crash.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV)

check-sanitize: deps
	@sh scripts/check-sanitize.sh
.PHONY: check-sanitize
$(TB)/prog_life: tests/progs/prog_life.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -lpthread
$(TB)/prog_load: tests/progs/prog_load.c $(TB)/libcuda.so.1 $(DOUBLE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -ldl -lpthread

# Hostile and unusual programs (tests/hostile, tests/test_hostile*.py).
HOSTILE_HDRS := lib/cuda_api.h
$(TB)/libhostile_ctor.so: tests/hostile/ctor_lib.c $(TB)/libcudart.so.13
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< $(RT_DYN)
$(TB)/prog_ctor: tests/hostile/prog_ctor.c $(TB)/libhostile_ctor.so
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< -L$(TB) -Wl,--no-as-needed -l:libhostile_ctor.so $(RT_DYN)
$(TB)/libhostile_loader_lock.so: tests/hostile/loader_lock_lib.c
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $<
$(TB)/prog_loader_lock: tests/hostile/prog_loader_lock.c $(TB)/libcuda.so.1 $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -ldl -lpthread
$(TB)/libhostile_interposer.so: tests/hostile/interposer.c $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< -ldl
$(TB)/prog_routes: tests/hostile/prog_routes.c $(TB)/libcuda.so.1 $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -ldl
$(TB)/mirror/libcuda.so.1: $(FAKE_DRIVER) tests/doubles/fakecuda_int.h $(DOUBLE_HDRS)
	@mkdir -p $(TB)/mirror
	$(Q)$(CC) $(TEST_CFLAGS) -DMIRROR_PROCS -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $(FAKE_DRIVER) -ldl -lpthread
$(TB)/proctool/libcuda.so.1: $(FAKE_DRIVER) tests/doubles/fakecuda_int.h $(DOUBLE_HDRS)
	@mkdir -p $(TB)/proctool
	$(Q)$(CC) $(TEST_CFLAGS) -DPROC_TOOL -fPIC -shared -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 -o $@ $(FAKE_DRIVER) -ldl -lpthread
HOSTILE_PROGS := $(addprefix $(TB)/,proctool/libcuda.so.1 libhostile_ctor.so prog_ctor libhostile_loader_lock.so prog_loader_lock \
	libhostile_interposer.so prog_routes mirror/libcuda.so.1)
test-build: $(HOSTILE_PROGS)
$(TB)/prog_fork_busy: tests/hostile/prog_fork_busy.c $(TB)/libcuda.so.1 $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -lpthread
test-build: $(TB)/prog_fork_busy $(TB)/bench_call
# Faults on purpose: never instrumented (a sanitizer would report the fault).
$(TB)/prog_signals: tests/hostile/prog_signals.c $(TB)/libcuda.so.1 $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -O0 -fno-sanitize=all -o $@ $< $(DRV)
test-build: $(TB)/prog_signals
$(TB)/prog_files: tests/hostile/prog_files.c $(TB)/libcuda.so.1 $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV)
test-build: $(TB)/prog_files
$(TB)/prog_longjmp: tests/hostile/prog_longjmp.c $(TB)/libcuda.so.1 $(TB)/libcudart.so.13 $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) $(RT_DYN)
test-build: $(TB)/prog_longjmp
$(TB)/libhostile_dtor.so: tests/hostile/dtor_lib.c $(TB)/libcudart.so.13 include/gpuspy.h include/gpuspy/format.h
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< $(RT_DYN) -lpthread
$(TB)/prog_threads_many: tests/hostile/prog_threads_many.c $(TB)/libcuda.so.1 $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -lpthread
test-build: $(TB)/prog_threads_many
$(TB)/prog_thread_stacks: tests/hostile/prog_thread_stacks.c $(TB)/libcuda.so.1 $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -lpthread
test-build: $(TB)/prog_thread_stacks
$(TB)/libcount_backtrace.so: tests/hostile/count_backtrace.c
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< -ldl
test-build: $(TB)/libcount_backtrace.so
$(TB)/prog_dtor: tests/hostile/prog_dtor.c $(TB)/libhostile_dtor.so
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< -L$(TB) -Wl,--no-as-needed -l:libhostile_dtor.so $(RT_DYN)
test-build: $(TB)/prog_dtor
$(TB)/prog_rawfork: tests/hostile/prog_rawfork.c $(TB)/libcuda.so.1 $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -lpthread
$(TB)/libhostile_slow_cupti.so: tests/hostile/slow_cupti.c
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< -ldl
test-build: $(TB)/prog_rawfork $(TB)/libhostile_slow_cupti.so
$(TB)/prog_live: tests/hostile/prog_live.c $(TB)/libcuda.so.1 $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -lpthread
test-build: $(TB)/prog_live
$(TB)/prog_cancel: tests/hostile/prog_cancel.c $(TB)/libcuda.so.1 $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -lpthread
test-build: $(TB)/prog_cancel
$(TB)/prog_notes: tests/hostile/prog_notes.c $(TB)/libcuda.so.1 $(HOSTILE_HDRS)
	$(Q)$(CC) $(TEST_CFLAGS) -o $@ $< $(DRV) -ldl
$(TB)/libhostile_nothreads.so: tests/hostile/nothreads.c
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $<
$(TB)/libhostile_cut_on_map.so: tests/hostile/cut_on_map.c
	$(Q)$(CC) $(TEST_CFLAGS) -shared -fPIC -o $@ $< -ldl
test-build: $(TB)/prog_notes $(TB)/libhostile_nothreads.so $(TB)/libhostile_cut_on_map.so

# Unit tests of the report's arithmetic (tests/unit/, run by tests/test_advice.py).
$(TB)/unit_period: tests/unit/period_test.c tools/report/period.c tools/report/period.h
	@mkdir -p $(TB)
	$(Q)$(CC) $(TEST_CFLAGS) -Itools -o $@ tests/unit/period_test.c tools/report/period.c
test-build: $(TB)/unit_period
