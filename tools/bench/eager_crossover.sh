#!/usr/bin/env bash
# eager_crossover.sh: where the eager protocol stops paying (HCCL_EAGER_MAX_BYTES, docs/algorithms.md).
#
# For every N and collective, runs build/tools/perf/<coll>_perf under hcclrun with the eager
# protocol at its largest crossover (HCCL_EAGER_MAX_BYTES=65536: every op whose per-rank block is
# at most one 64 KiB box goes eager) and off (=0: mesh), A then B back to back, `trials` times;
# keeps the median out-of-place time per size (host clock, back-to-back calls, slowest rank:
# the perf tools' defaults) and prints one row per size: eager us, mesh us, mesh / eager.
# Sizes are the perf tools' `size` column (the larger buffer: N x block for allgather,
# reducescatter, scatter, alltoall); the crossover compares the per-rank block (count x dtype).
# Usage: tools/bench/eager_crossover.sh [-n "2 4 8"] [-c "allreduce ..."] [-t trials] [-B build]
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$ROOT/build
NS="2 4 8"
COLLS="allreduce allgather reducescatter alltoall broadcast reduce scatter"
TRIALS=3
while getopts "n:c:t:B:" o; do
    case $o in
    n) NS=$OPTARG ;;
    c) COLLS=$OPTARG ;;
    t) TRIALS=$OPTARG ;;
    B) BUILD=$OPTARG ;;
    *) echo "usage: $0 [-n \"2 4 8\"] [-c \"allreduce ...\"] [-t trials] [-B build]" >&2; exit 2 ;;
    esac
done

tool() {
    case $1 in
    allreduce) echo all_reduce_perf ;; allgather) echo all_gather_perf ;;
    reducescatter) echo reduce_scatter_perf ;; alltoall) echo alltoall_perf ;;
    broadcast) echo broadcast_perf ;; reduce) echo reduce_perf ;; scatter) echo scatter_perf ;;
    *) echo "unknown collective $1" >&2; exit 2 ;;
    esac
}

# One run: "size time" lines (out-of-place time; in place for Broadcast, which has only that).
run() { # env n coll
    env "$1" "$BUILD/tools/hcclrun" -n "$2" "$BUILD/tools/perf/$(tool "$3")" -b 8 -e 256K -f 2 -m 0 -c 0 2>/dev/null |
        awk '$1 == "[rank" && $2 == "0]" && $3 ~ /^[0-9]+$/ { print $3, ($8 == "N/A" ? $12 : $8) }'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in $NS; do
    for coll in $COLLS; do
        for t in $(seq "$TRIALS"); do
            run HCCL_EAGER_MAX_BYTES=65536 "$n" "$coll" >"$tmp/on.$t"
            run HCCL_EAGER_MAX_BYTES=0 "$n" "$coll" >"$tmp/off.$t"
        done
        echo "# $coll, N=$n: median of $TRIALS (us, out of place; Broadcast in place)"
        printf "%10s %10s %10s %8s\n" size eager mesh mesh/eager
        cat "$tmp"/on.* | sort -n -k1,1 -k2,2g | awk -v k="$TRIALS" '{ v[$1] = v[$1] " " $2; c[$1]++ }
            END { for (s in v) { split(substr(v[s], 2), a, " "); print s, a[int((c[s] + 1) / 2)] } }' |
            sort -n >"$tmp/on"
        cat "$tmp"/off.* | sort -n -k1,1 -k2,2g | awk '{ v[$1] = v[$1] " " $2; c[$1]++ }
            END { for (s in v) { split(substr(v[s], 2), a, " "); print s, a[int((c[s] + 1) / 2)] } }' |
            sort -n >"$tmp/off"
        join "$tmp/on" "$tmp/off" | awk '{ printf "%10s %10.1f %10.1f %8.2f\n", $1, $2, $3, $3 / $2 }'
        rm -f "$tmp"/on.* "$tmp"/off.*
    done
done
