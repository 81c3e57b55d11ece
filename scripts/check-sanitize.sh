#!/bin/sh
# `make check-sanitize`: the whole test suite with libgpuspy, the gpuspy
# command, the doubles and the test programs built with AddressSanitizer and
# UndefinedBehaviorSanitizer (any report fails the run), then the threaded
# tests with ThreadSanitizer. Builds in a copy of the tree under build/.
set -e
cd "$(dirname "$0")/.."
run_variant() { # name cflags runtime targets tests...
	name=$1 flags=$2 rt=$3 targets=$4; shift 4
	dir=build/$name
	rm -rf "$dir"; mkdir -p "$dir"
	git ls-files -z | xargs -0 cp --parents -t "$dir"
	( cd "$dir" && make -s -j"$(nproc 2>/dev/null || echo 2)" $targets CFLAGS="-O1 -g -fno-omit-frame-pointer $flags" > build.log 2>&1 ) \
		|| { tail -20 "$dir/build.log"; exit 1; }
	echo "== $name: $(basename "$rt") preloaded first"
	GPUSPY_TEST_PRELOAD_PREFIX="$rt:" python3 "$dir/tests/run.py" -j"$(nproc 2>/dev/null || echo 2)" "$@"
}
# The crash tests compare deaths by signal with and without gpuspy: the
# sanitizers must not turn those signals into their own reports.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:halt_on_error=1:exitcode=99:verify_asan_link_order=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0:use_sigaltstack=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=98
export TSAN_OPTIONS=halt_on_error=1:exitcode=97:report_signal_unsafe=0:die_after_fork=0:suppressions=$PWD/scripts/tsan.supp
run_variant asan "-fsanitize=address,undefined -fno-sanitize-recover=all" "$(gcc -print-file-name=libasan.so)" \
	"all test-build examples" --all
# The threaded tests need no examples (nvcc): not built. Then the hostile
# ones with threads (cancellation, a trace cut under running threads, held
# connections, longjmp out of a hook), about 20 s more. Left out:
# header_fields_overwritten_while_it_runs (libunwind's per-thread cache
# destructor crashes TSan's runtime), serve_shows_every_process (70
# processes: over a minute under TSan), and
# calls_on_thread_exit_paths_are_recorded_and_losses_named (skipped under
# the sanitizers: their allocator comes before gpuspy's host hooks).
run_variant tsan "-fsanitize=thread" "$(gcc -print-file-name=libtsan.so)" "all test-build" threads sigkill fork nvtx load_64 flight stacks_threads gpu_time_from_events cupti_ windows_have record_for report_several ranks_name \
	thread_cancelled_in_the_first_cuda_call thread_cancelled_as_the_allocation_table_fills trace_emptied_while_it_runs \
	telemetry_lock_file_is_never_followed serve_answers_through_held_connections longjmp_out_of_a_hook_keeps_recording
