#!/usr/bin/env bash
# eager_crossover.sh: where the eager protocol stops paying, and whether the default follows it
# (HCCL_EAGER_MAX_BYTES, docs/algorithms.md "Selection and HCCL_ALGO").
#
# For every N and collective, runs build/tools/perf/<coll>_perf under hcclrun three ways, in turn,
# `trials` times: eager at its largest crossover (HCCL_EAGER_MAX_BYTES=65536: every call whose
# per-rank block fits one 64 KiB box goes eager; Broadcast, Scatter and Reduce one-way where they
# would), eager off (=0: mesh), and the library's default (the variable unset), their order rotated
# from trial to trial (a launch reads faster or slower for where it falls). Each launch times
# every size of the sweep as the perf tools do (after a barrier, `iters` back-to-back calls, one
# synchronize, host clock, the slowest rank: compare.sh's timing); per size the median launch of
# each way is kept. One row per size: eager us, mesh us, default us, mesh / eager (above 1: eager
# is faster), and default / the faster of the two (1.00: the default is as fast as the better
# choice). A launch keeps its mode (fast, slow) for all its sizes, so a run of rows above 1 can be
# one launch's: repeat with more trials before moving a crossover (docs/perf.md).
# Sizes are the perf tools' `size` column (N x block for allgather, reducescatter, scatter,
# alltoall); the crossover compares the per-rank block (count x dtype size).
#
# Usage: tools/bench/eager_crossover.sh [-n "2 4 8"] [-c "allreduce ..."] [-t trials] [-i iters]
#                                       [-b min_size] [-e max_size] [-B build]
# -c: allreduce allgather reducescatter alltoall broadcast reduce scatter (the default: all seven),
#     or any collective compare.sh takes.
# -i: timed calls per launch and size (default 1000, after 10 warm-up calls): loops of 20 calls, the
#     perf tools' default, measured the VM's stalls more than the protocols (docs/perf.md).
# -b, -e: the sweep, doubling from -b to -e (default 8 to 256K; K/M suffixes).
# Run time: about 80 s for the defaults on a 2-core machine (N = 8 the longest).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tools/bench/bench_lib.sh
source "$ROOT/tools/bench/bench_lib.sh"
BUILD=$ROOT/build
NS="2 4 8"
COLLS="allreduce allgather reducescatter alltoall broadcast reduce scatter"
TRIALS=3
ITERS=1000
MIN_SIZE=8
MAX_SIZE=256K
TIMEOUT=600
AGG=3

while getopts "n:c:t:i:b:e:B:h" opt; do
    case $opt in
    n) NS=$OPTARG ;;
    c) COLLS=$OPTARG ;;
    t) TRIALS=$OPTARG ;;
    i) ITERS=$OPTARG ;;
    b) MIN_SIZE=$OPTARG ;;
    e) MAX_SIZE=$OPTARG ;;
    B) BUILD=$OPTARG ;;
    *) usage ;;
    esac
done
check_rank_counts "$NS"
[[ $TRIALS =~ ^[1-9][0-9]*$ ]] || bad -t "$TRIALS" "a number >= 1"
[[ $ITERS =~ ^[1-9][0-9]*$ ]] || bad -i "$ITERS" "a number >= 1"
[[ $MIN_SIZE =~ ^[1-9][0-9]*[KM]?$ ]] || bad -b "$MIN_SIZE" "a size like 8 or 64K"
[[ $MAX_SIZE =~ ^[1-9][0-9]*[KM]?$ ]] || bad -e "$MAX_SIZE" "a size like 8 or 64K"
for c in $COLLS; do perf_name "$c" >/dev/null || exit 2; done
# shellcheck disable=SC2046 # one target per collective
build_missing hcclrun $(for c in $COLLS; do echo "$(perf_name "$c")_perf"; done)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/eager_crossover.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
ARGS="-b $MIN_SIZE -e $MAX_SIZE -f 2 -w 10 -n $ITERS"

# One launch of way w (eager, mesh, default): "<size> <us>" per size into out.
launch() { # way n coll out
    (
        case $1 in
        eager) export HCCL_EAGER_MAX_BYTES=65536 ;;
        mesh) export HCCL_EAGER_MAX_BYTES=0 ;;
        default) unset HCCL_EAGER_MAX_BYTES ;;
        esac
        oh_rows "$3" "$2" "$ARGS" "$WORK/errors" | awk '{ print $1, $2 }' >"$4"
    )
}

# The median of each size over the files given: "<size> <us>", by size.
medians() { # file...
    sort -k1,1n -k2,2g "$@" | awk '{ v[$1] = v[$1] " " $2; c[$1]++ }
        END { for (s in v) { split(substr(v[s], 2), a, " "); print s, a[int((c[s] + 1) / 2)] } }' | sort -n
}

echo "# tools/bench/eager_crossover.sh -n \"$NS\" -c \"$COLLS\" -t $TRIALS -i $ITERS -b $MIN_SIZE -e $MAX_SIZE"
echo "# machine: $(nproc) CPUs, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
status=0
for n in $NS; do
    for coll in $COLLS; do
        for t in $(seq "$TRIALS"); do
            # Rotated each trial: a launch runs faster or slower for where it falls (after which
            # launch, in which minute of the VM), so no way always runs first or last.
            ways=(eager mesh default eager mesh)
            for way in "${ways[@]:$(((t - 1) % 3)):3}"; do launch "$way" "$n" "$coll" "$WORK/$way.$t"; done
        done
        for way in eager mesh default; do medians "$WORK/$way".* >"$WORK/$way"; done
        echo
        echo "# $coll, N=$n: median of $TRIALS launches, us a call ($([[ $coll == broadcast ]] && echo "in place" || echo "out of place"))"
        printf "%10s %9s %9s %9s %11s %14s\n" size eager mesh default mesh/eager default/best
        if [[ ! -s $WORK/eager || ! -s $WORK/mesh || ! -s $WORK/default ]]; then
            echo "# no rows: a launch failed (below)"
            status=1
        else
            join "$WORK/eager" "$WORK/mesh" | join - "$WORK/default" |
                awk '{ best = $2 < $3 ? $2 : $3
                       printf "%10s %9.2f %9.2f %9.2f %11.2f %14.2f\n", $1, $2, $3, $4, $3 / $2, $4 / best }'
        fi
        rm -f "$WORK"/eager* "$WORK"/mesh* "$WORK"/default*
    done
done
if [[ -s $WORK/errors ]]; then
    echo "# errors (first lines):"
    head -5 "$WORK/errors" | sed 's/^/#   /'
fi
exit $status
