#!/bin/bash
# SPDX-License-Identifier: MIT
# The H200 runs that issues 52 and 54 still wait for, each PART one device
# call of under 10 minutes (the device tool brings back at most 8 files:
# each part writes summary.md and one tarball into $OUT). From the
# repository root after `make gpu-carry`, carrying .gpu and tools/gpuspy:
#   PART=54 bash tests/gpu/pending.sh    the faults again (exits.sh's
#        index and fault: the C program's stack passes over the runtime
#        linked into it now), then the whole zoo (zoo.sh) on this library
#   PART=52w1 ... PART=52w5 bash tests/gpu/pending.sh   the what-if
#        suite in five calls, each under 560 s on an H100 (a torch
#        program's round, slow and fixed untraced and slow traced, about
#        55 s there: whatif-run4-h100.md, its last section): 52w1 pageable and
#        dataloader, 52w2 item and empty_cache, 52w3 launch_bound (eight
#        rounds, HOST_ROUNDS), 52w4 decode (sixteen: 161 s for eight on
#        an H100, its slow step 1.76 to 3.41 ms by process), 52w5 jax_hostbound,
#        sync_copies, upload_once and healthy (the last two one round,
#        QUIET_ROUNDS). `python3 tests/gpu/whatif/import.py DIR runN` on
#        each part's whatif folder adds its programs to set runN. Run5,
#        decode's sixteen rounds: 1,228 s of commands on an H100, 345,
#        223, 209, 213 and 238 s (whatif-run5-h100.md; about 30 s more a
#        call held); one set must come from one kind of card. Run6,
#        decode's eight rounds, on a slower H100: 410, 279, 339, 364
#        and 172 s (whatif-run6-h100.md): the whole suite then fits a
#        session's 1,800 s only with decode at eight. Run7, on another
#        slow H100, HOST_ROUNDS=7 for 52w3 and 52w5 and 5 for 52w4: 427,
#        305, 336, 434 and 135 s (the same file's second part). Run8, on a
#        fast H100: 321 and 211 s, then 52w3, 52w4 and 52w5 in one call of
#        421 s, each with its own OUT, HOST_ROUNDS 5, 8 and 5 (its last part).
#   PART=52c bash tests/gpu/pending.sh   what tracing adds to the host-bound
#        JAX step, part by part (tests/gpu/whatif/traced_cost.sh; run on
#        an H100: tests/gpu/results/round3/traced-cost-h100.md)
#   PART=52e, PART=52f bash tests/gpu/pending.sh   what tracing adds to
#        decode and launch_bound (52e), the empty_cache() loop (52f: its
#        traced slow step runs 0.22 ms a step further over its untraced
#        one than its fix's does, and the replay leaves 0.1 of it, run11;
#        the first cudaFree after the GPU's last work returns 236 us after
#        it, the next seven in 48-81 us each),
#        slow only, untraced, gpuspy without CUPTI, without stacks,
#        without its PyTorch helper and whole, four rounds (52f:
#        three), and the
#        step each traced run's replay makes of it: whether
#        the replay takes off what tracing added (traced_cost.sh; run4's
#        errors are in the slow step replayed: whatif-run4-h100.md)
#   PART=52d bash tests/gpu/pending.sh   where the host-bound JAX loop's
#        error comes from: the spread of its untraced truth, pinned or
#        not, in one process, and of its traced prediction
#        (tests/gpu/whatif/jax_spread.sh)
#   ONLY=empty_cache ROUNDS=2 PART=52w2: the empty_cache() loop alone,
#        whose replayed slow step sat +0.135 to +0.422 ms over the
#        untraced one in run1-run4; with each stack walk timed it is not
#        the walks (107 s on an H100:
#        tests/gpu/results/round3/whatif-empty-cache-own-h100.md)
#   PART=52t bash tests/gpu/pending.sh   what CUPTI's activity records
#        cost the host-bound programs beyond the calls the replay prices,
#        inside one process (tests/gpu/whatif/cupti_toggle.sh)
#   PART=52j bash tests/gpu/pending.sh   the JAX loop's tracing cost on
#        this card, small enough for what is left of a session (under
#        210 s): CUPTI's records on and off in one process (two), the
#        slow loop untraced, untraced beside a busy CPU, under gpuspy
#        without CUPTI and whole (two rounds), and one graph launch of 4
#        and 28 kernels with and without CUPTI (bench/gpu/cupti_costs.cu,
#        five rounds). The replay's JAX constants were fitted on H100s;
#        on the H200 its replayed slow step sat 15-53 us under the
#        untraced median in three of four sets (score.py --parts): either
#        CUPTI costs less there or untraced processes run slower
#   PART=52g bash tests/gpu/pending.sh   why the two pageable programs'
#        traced processes ran faster than their untraced ones in every
#        set (run7: 17.8-18.5 against 17.8-22.1 ms a step): slow only,
#        untraced, untraced beside a busy CPU, gpuspy without CUPTI,
#        without stacks and whole, four rounds (traced_cost.sh)
#   PART=52G bash tests/gpu/pending.sh   52g made small, one call of
#        about 250 s: pageable only, untraced, beside a busy CPU, gpuspy
#        without CUPTI, without its PyTorch helper and whole, four rounds
#   PART=52s bash tests/gpu/pending.sh   what a launch's stack sampled every
#        10 ms (GPUSPY_STACK_LAUNCH_PERIOD, the default) costs the
#        launch-bound, decode and JAX loops (slow: untraced, gpuspy with
#        GPUSPY_STACK_LAUNCHES=0, gpuspy, three rounds), and the function
#        each report then says their launches come from (traced_cost.sh's
#        list after its tables). Run with ROUNDS=2, then ROUNDS=1 PART=52L,
#        in one call on an H100: 199 s
#        (tests/gpu/results/round3/traced-cost-h100.md)
#   PART=52L bash tests/gpu/pending.sh   the starved DataLoader's line: its
#        slow program untraced and under gpuspy, two rounds, each report's
#        first diagnosis (which names where the DataLoader was made)
#   PART=52p bash tests/gpu/pending.sh   whether the host-bound programs'
#        spread by process is the CPU they land on: each CPU's Python speed,
#        then the JAX loop unpinned, on the fastest four and on the slowest
#        four (tests/gpu/whatif/cpu_speed.sh)
#   PART=52m bash tests/gpu/pending.sh   why the JAX loop's processes run
#        its slow step in two modes, and a set's traced ones in one:
#        untraced, without address-space randomisation, on one CPU,
#        under libgpuspy without CUPTI, traced, traced without
#        randomisation (tests/gpu/whatif/jax_modes.sh)
#   PART=52l OLD=build/gpuspy-OLD bash tests/gpu/pending.sh   the JAX
#        loop's what-if over runs of 30000 steps (about 3 s), with the
#        report and, to compare, a report built before a change to the
#        replay's window (tests/gpu/whatif/jax_long.sh)
#   PART=52z bash tests/gpu/pending.sh   the zoo's C programs as fixtures,
#        and the compiled loop's loader with 2 and 3 workers (about 300 s)
#   (tests/gpu/parts.sh runs a list of parts over calls, as time allows;
#   ONLY="jax_hostbound" HOST_ROUNDS=5 PART=52w5: only those;
#   EXITS=fault ZOO_SECS=300 PART=54: a shorter part, the zoo cut by time)
# (tests/gpu/whatif/run.sh: python3 tests/gpu/whatif/import.py on each
# part's whatif folder makes them a fixture set.)
set -u
FINAL=${OUT:-/tmp/gpuspy-gpu}
R=/tmp/gpuspy-pending
rm -rf "$R"; mkdir -p "$R" "$FINAL"
step() { # name seconds script [args...]: OUT=$R/name
	local name=$1 secs=$2; shift 2
	mkdir -p "$R/$name"
	OUT="$R/$name" timeout "$secs" bash "$@" > "$R/$name/log.txt" 2>&1
	echo "$name: exit $?" | tee -a "$R/status.txt"
}
case "${PART:-}" in
54)
	EXITS=${EXITS:-index fault} step exits 100 tests/gpu/exits.sh
	step zoo "${ZOO_SECS:-430}" tests/gpu/zoo.sh
	# Cut by its time: the table of the cases that finished. (The
	# scripts' own timeouts run in the foreground, so each step's
	# timeout ends all that its script started.)
	[ -s "$R/zoo/zoo.md" ] || timeout 30 python3 tests/gpu/zoo_check.py /tmp/gpuspy-zoo $(cd /tmp/gpuspy-zoo &&
		for c in */tools.rc; do [ -e "$c" ] && echo "${c%/tools.rc}"; done) > "$R/zoo/zoo.md"
	cp /tmp/gpuspy-zoo/zoo.json "$R/zoo/" 2> /dev/null
	# Each case's output, stderr, exit codes and reports (not its traces), to read.
	(cd /tmp/gpuspy-zoo && find . -maxdepth 2 \( -name '*.out' -o -name '*.err' -o -name '*.rc' -o -name 'report.*' \) -size -1024k |
		tar czf "$R/zoo/outputs.tgz" -T -) 2> /dev/null
	cat "$R/status.txt" "$R"/exits/exits.md "$R"/zoo/zoo.md 2>/dev/null ;;
52w[1-5])
	case $PART in
	52w1) progs="pageable dataloader" ;;
	52w2) progs="item empty_cache" ;;
	52w3) progs="launch_bound" ;;
	52w4) progs="decode"; export HOST_ROUNDS=${HOST_ROUNDS:-16} ;; # its spread: whatif-run4-h100.md
	52w5) progs="jax_hostbound sync_copies upload_once healthy" ;;
	esac
	progs=${ONLY:-$progs}
	# STEP_SECS (parts.sh: what is left of its call) cuts the programs short
	# in time for the ones done to come back (run.sh writes them as each ends).
	ROUNDS=${ROUNDS:-3} QUIET_ROUNDS=${QUIET_ROUNDS:-1} step whatif "${STEP_SECS:-560}" tests/gpu/whatif/run.sh $progs
	cat "$R/status.txt" "$R"/whatif/whatif.md 2>/dev/null ;;
52d)
	step spread 540 tests/gpu/whatif/jax_spread.sh
	cat "$R/status.txt" "$R"/spread/jax_spread.md 2>/dev/null ;;
52e | 52f | 52g | 52G | 52s | 52L)
	# 52e: 2 x 5 modes x 4 rounds of runs of 7-13 s on an H100; 52f: 5
	# x 3 of 10-18 s (whatif-run4-h100.md), each with a report.
	progs="decode launch_bound" modes="none nocupti nostacks notorch gpuspy" rounds=4
	[ $PART = 52f ] && progs="empty_cache" modes="none nocupti nostacks notorch gpuspy" rounds=3
	[ $PART = 52g ] && progs="pageable sync_copies" modes="none busy nocupti nostacks gpuspy" rounds=4
	[ $PART = 52s ] && progs="launch_bound decode jax_hostbound" modes="none nolaunches gpuspy" rounds=3
	[ $PART = 52L ] && progs="dataloader" modes="none gpuspy" rounds=2
	[ $PART = 52G ] && progs="pageable" modes="none busy nocupti notorch gpuspy" rounds=4
	TC_PROGS=$progs TC_VARIANTS=slow TC_MODES=$modes TC_BENCH=0 ROUNDS=${ROUNDS:-$rounds} \
		step cost 540 tests/gpu/whatif/traced_cost.sh
	cat "$R/status.txt" "$R"/cost/traced_cost.md 2>/dev/null ;;
52t)
	step toggle 500 tests/gpu/whatif/cupti_toggle.sh
	cat "$R/status.txt" "$R"/toggle/cupti_toggle.md 2>/dev/null ;;
52p)
	step cpu 500 tests/gpu/whatif/cpu_speed.sh
	cat "$R/status.txt" "$R"/cpu/cpu_speed.md 2>/dev/null ;;
52m)
	step modes 560 tests/gpu/whatif/jax_modes.sh
	cat "$R/status.txt" "$R"/modes/jax_modes.md 2>/dev/null ;;
52l)
	ROUNDS=${ROUNDS:-8} OLD=${OLD:-} step long 560 tests/gpu/whatif/jax_long.sh
	cat "$R/status.txt" "$R"/long/jax_long.md 2>/dev/null ;;
52j)
	TG_PROGS="jax_hostbound:--steps=30000" TG_REPS=2 step toggle 90 tests/gpu/whatif/cupti_toggle.sh
	TC_PROGS=jax_hostbound TC_VARIANTS=slow TC_MODES="none busy nocupti gpuspy" ROUNDS=2 CC_ROUNDS=5 \
		step cost 120 tests/gpu/whatif/traced_cost.sh
	cat "$R/status.txt" "$R"/toggle/cupti_toggle.md "$R"/cost/traced_cost.md 2>/dev/null ;;
52z)
	# The zoo's C programs as fixtures (their traces, whose reports
	# test_fixtures.py asserts), and the compiled loop's loader at 3.44 ms
	# batches in the main process and with 2 and 3 workers: whether 2
	# kept up (tests/gpu/results/zoo/zoo.md, its last part).
	FIXTURES="um_streams_cublas dynpar vmm ipc callbacks ctx_migrate" COST=0 step fixtures 120 tests/gpu/fixtures.sh
	ROUNDS=${ROUNDS:-2} LOADS=3 WORKERS="2 3" step loader 300 tests/gpu/whatif/loader_cost.sh
	cat "$R/status.txt" "$R"/fixtures/fixtures.md "$R"/loader/loader_cost.md 2>/dev/null ;;
52c)
	step cost 500 tests/gpu/whatif/traced_cost.sh
	cat "$R/status.txt" "$R"/cost/traced_cost.md 2>/dev/null ;;
*)
	echo "PART=54, 52w1 to 52w5, 52z, 52c, 52d, 52e, 52f, 52g, 52G, 52L, 52j, 52l, 52m, 52p, 52s or 52t"; exit 2 ;;
esac > "$FINAL/summary.md"
( cd "$R" && tar czf "$FINAL/part$PART.tgz" . )
cat "$FINAL/summary.md"
