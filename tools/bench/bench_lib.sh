# shellcheck shell=bash
# bench_lib.sh: what the scripts of tools/bench (compare.sh, drift.sh, callcount.sh,
# eager_crossover.sh) share: the perf tool of a collective, the small size, building what is
# missing, one launch of OpenHCCL's perf tool or of a peer's benchmark as rows, and the usage, bad
# flag and rank-count exits. Sourced; perf_name and the exits need nothing, the rest ROOT, BUILD,
# TIMEOUT, AGG set (and compare_peers.sh sourced for peer_rows).

BENCH_NAME=${BENCH_NAME:-${0##*/}}

usage() { # the sourcing script's header comment, up to its "set -u"
    sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

bad() { # flag value what
    echo "$BENCH_NAME: $1 must be $3, got '$2'" >&2
    exit 2
}

# -n's rank counts: at least one, each a number >= 2; exits through bad otherwise.
check_rank_counts() { # "2 4 8"
    local n
    [[ -n ${1// /} ]] || bad -n "$1" "rank counts >= 2"
    for n in $1; do
        [[ $n =~ ^[1-9][0-9]*$ && $n -ge 2 ]] || bad -n "$n" "rank counts >= 2"
    done
}

perf_name() { # coll
    case $1 in
    allreduce) echo all_reduce ;;
    allgather) echo all_gather ;;
    reducescatter) echo reduce_scatter ;;
    broadcast) echo broadcast ;;
    alltoall) echo alltoall ;;
    reduce | scatter | sendrecv) echo "$1" ;;
    allgatherv) echo all_gatherv ;;
    reducescatterv) echo reduce_scatterv ;;
    alltoallv) echo alltoallv ;;
    alltoallvc) echo alltoallvc ;;
    *) echo "$BENCH_NAME: unknown collective '$1' (allreduce allgather reducescatter broadcast alltoall" \
            "reduce scatter sendrecv allgatherv reducescatterv alltoallv alltoallvc)" >&2
       return 2 ;;
    esac
}

# The smallest non-empty nccl-tests size: 8 B for the calls of one whole buffer (allreduce,
# broadcast, reduce, sendrecv), 16 B per rank for the others (nccl-tests rounds per-rank blocks
# down to 16 B, so 8 B would be an empty call).
small_size() { # coll n
    case $1 in allreduce | broadcast | reduce | sendrecv) echo 8 ;; *) echo $((16 * $2)) ;; esac
}

# Builds the targets (hcclrun, perf tools, memcpy_bw) missing from $BUILD; exits 2 if it cannot.
build_missing() { # target...
    local t need=0
    for t in "$@"; do
        [[ -x $(find "$BUILD/tools" -name "$t" -type f 2>/dev/null | head -1) ]] || need=1
    done
    ((need)) || return 0
    echo "# building $* in $BUILD"
    [[ -f $BUILD/CMakeCache.txt ]] || cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 2
    cmake --build "$BUILD" -j2 --target "$@" >/dev/null || { echo "$BENCH_NAME: build failed" >&2; exit 2; }
}

# One launch of OpenHCCL's perf tool: "<size> <time_us> <busbw> <in-place busbw>" per size row, the
# out-of-place half (in place for broadcast, its only form). Errors go to the file errs.
oh_rows() { # coll n "perf args" errs
    local prog
    prog=$BUILD/tools/perf/$(perf_name "$1")_perf
    # shellcheck disable=SC2086 # the perf args are a list
    timeout "$TIMEOUT" "$BUILD/tools/hcclrun" -n "$2" --timeout "$TIMEOUT" "$prog" $3 -a "$AGG" -c 0 -m 0 2>>"$4" |
        sed -n 's/^\[rank 0\] //p' | awk '!/^#/ { t = $6; b = $8; if (t == "N/A") { t = $10; b = $12 }
                                            print $1, t, b, $12 }'
}

# One launch of a peer's benchmark (compare_peers.sh): "<size> <time_us> <busbw>" per size row.
peer_rows() { # peer coll n "args" errs
    peer_command "$1" "$3"
    # shellcheck disable=SC2086 # the args are a list
    timeout "$TIMEOUT" "${PEER_CMD[@]}" -c "$2" $4 -a "$AGG" 2>>"$5" | awk '!/^#/ { print $1, $3, $5 }'
}
