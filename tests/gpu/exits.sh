#!/bin/bash
# SPDX-License-Identifier: MIT
# No GPU record lost on any way out (issue 54, points 3 and 4), on the
# H200 with CUPTI: a PyTorch loop that ends by os._exit, abort(), SIGTERM
# it does not handle, a device-side assert (PyTorch's index check, and a C
# kernel's assert), and SIGKILL while it launches, the last with the
# periodic flush at its default and at 1 s. Each ending runs untraced
# first: exit code and output must not change. tests/gpu/exits_check.py
# checks every trace and writes $OUT/exits.md. From the repository root
# after `make gpu-carry`:  bash tests/gpu/exits.sh
# EXITS (default "exit abort term index fault kill") runs some endings only.
. tests/gpu/setup.sh /tmp/gpuspy-exits
E=tests/gpu/exits
EXITS=" ${EXITS:-exit abort term index fault kill} "
nvcc -O2 -g -o "$WORK/fault_bin" "$E/fault.cu" || exit 1 # -g: the report names its lines
traced() { # dir command...: with CUPTI, as the user's defaults are
	local d=$1; shift
	GPUSPY_DIR="$d" GPUSPY_CUPTI=on LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@"
}
pair() { # name command...
	local name=$1; shift
	case $EXITS in *" $name "*) ;; *) return 0 ;; esac
	local d="$WORK/$name"; mkdir -p "$d/traces"
	timeout --foreground 120 "$@" > "$d/untraced.out" 2> "$d/untraced.err"; echo $? > "$d/untraced.rc"
	timeout --foreground 120 env GPUSPY_DIR="$d/traces" GPUSPY_CUPTI=on LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" \
		> "$d/traced.out" 2> "$d/traced.err"; echo $? > "$d/traced.rc"
	for f in "$d"/traces/*.gspy; do [ -e "$f" ] && ./tools/gpuspy dump "$f" -o "${f%.gspy}.jsonl"; done
	./tools/gpuspy report --json "$d/traces" > "$d/report.json" 2> "$d/report.err"
	./tools/gpuspy report --color never "$d/traces" > "$d/report.txt" 2>> "$d/report.err"
	echo "$name: exit $(cat "$d/untraced.rc") / $(cat "$d/traced.rc")"
}
for m in exit abort term index; do
	pair "$m" python3 "$E/loop.py" "$m"
done
pair fault "$WORK/fault_bin"

# SIGKILL while launching, 8 s after the warm-up: at most the last flush
# period's GPU records (and the second before CUPTI hands them) may be lost.
for period in 5 1; do
	case $EXITS in *" kill "*) ;; *) break ;; esac
	d="$WORK/kill$period"; mkdir -p "$d/traces"
	GPUSPY_CUPTI_FLUSH=$period traced "$d/traces" python3 "$E/loop.py" kill > "$d/traced.out" 2>&1 &
	pid=$!
	for _ in $(seq 240); do grep -q looping "$d/traced.out" && break; sleep 0.5; done
	sleep 8
	kill -9 $pid; wait $pid 2> /dev/null
	for f in "$d"/traces/*.gspy; do [ -e "$f" ] && ./tools/gpuspy dump "$f" -o "${f%.gspy}.jsonl"; done
	./tools/gpuspy report --color never "$d/traces" > "$d/report.txt" 2> "$d/report.err"
	echo "kill$period: done"
done
python3 tests/gpu/exits_check.py "$WORK" | tee "$OUT/exits.md"
rc=${PIPESTATUS[0]}
( cd "$WORK" && tar czf "$OUT/exits.tgz" --exclude='*.gspy' --exclude='*.jsonl' --exclude=./fault_bin . )
exit "$rc"
