#!/usr/bin/env bash
# compare.sh: OpenHCCL's perf tools side by side with Open MPI, MPICH and Gloo on this machine
# (issue #8's table: OpenHCCL against the best of them).
#
# For every N and collective it runs build/tools/perf/<coll>_perf under hcclrun and each peer's
# benchmark (tools/bench/mpi_coll_bench.c, gloo_coll_bench.cc) at the same sizes, all timed as
# nccl-tests does (after a barrier, back-to-back calls, one synchronize, host clock, the slowest
# rank: -a 3; -a 4, the span from the first rank's start to the last rank's end, for every library
# alike), each launched `trials` times, interleaved, the median trial kept; then prints two
# tables:
#   OpenHCCL against the best peer of each row:
#     small / 64 KiB: latency (us) of OpenHCCL and of the fastest peer, ratio OpenHCCL / peer (lower
#                     is better), and the spread (slowest / fastest trial) of both
#     1 MiB / large (64 MiB, -L): busbw (GB/s, nccl-tests factors), ratio OpenHCCL / best peer
#                     (higher is better)
#   every library's medians, side by side.
# "small" is the smallest non-empty nccl-tests size: 8 B for allreduce and broadcast, 16 B per rank
# (16*N B) for allgather, reducescatter and alltoall (nccl-tests rounds per-rank blocks down to
# 16 B, so 8 B would be an empty call). Also the host's 1- and 2-thread memcpy bandwidth at 64 MiB
# (and 2 threads of the emulator's non-temporal copy kernel, memcpy_bw -k nt),
# measured at the start and at the end of the same run; at N = 2 a third table sets Broadcast,
# AllGather (out of place and in place) and AlltoAll at the large size against the 2-thread memcpy
# (and, for the memory they move, against the nt-copy kernel's 2 threads). Last, issue #8's
# criteria one by one: pass or FAIL by the worst row, naming that row and how many rows failed.
#
# The peers are optional (tools/bench/compare_peers.sh: how each is built and launched); one that
# is missing is skipped with the command that installs it. Open MPI runs on shared memory only
# (pml ob1, btl self,vader: no network), unbound, oversubscribed (more ranks than cores), and by
# default with mpi_yield_when_idle 1: a rank waiting for a descheduled peer gives its core away, as
# OpenHCCL's blocking waits do (Open MPI turns this on by itself only when it sees more ranks than
# cores; on a machine shared with other work, busy polling at N=2 costs it milliseconds per call).
# -y 0 keeps Open MPI's default. MPICH always polls, so it runs only up to -M ranks (default: the
# number of CPUs). Gloo runs over TCP on loopback (it has no shared-memory transport).
# Env: each peer's compiler and launcher (MPICC, MPIRUN_BIN, MPICH_CC, MPICH_RUN, GLOO_CXX; see
# compare_peers.sh).
#
# Usage: tools/bench/compare.sh [-n "2 4 8"] [-c "allreduce allgather ..."] [-t trials] [-y 0|1]
#                               [-p "ompi mpich gloo"] [-M max_mpich_ranks] [-i iters] [-I iters]
#                               [-B build] [-L large_size] [-a 3|4]
# -a: how a launch's time is taken over its ranks, for every library: 3 (default) the slowest
#     rank's own loop, as nccl-tests and OSU; 4 the span from the first rank's start to the last
#     rank's end. With more ranks than cores the ranks leave the barrier one after another, and a
#     rank that waited for a CPU starts its clock late: -a 3 then swings between launches where the
#     ranks' loops overlapped and launches where they ran one after another (docs/perf-history.md).
# -L: the large size (default 64M; the issue's range is 64-256 MiB: -L 256M), K/M/G suffix.
# -i: timed calls per launch at the small size (default 1000, after 10 warm-up calls), the same for
#     every library, as OSU's benchmarks time messages up to 8 KiB; a loop of 100 calls of ~1 us is
#     shorter than the scheduling stalls of a shared 2-core VM and the skew between ranks leaving
#     the barrier, so its slowest/fastest launch measured the VM (docs/perf-history.md).
# -I: the same at 64 KiB (default 1000; OSU uses 100 above 8 KiB). 100 calls of 20-500 us are 2-50
#     ms, again the length of the VM's stalls and of the ranks' start one after another: both
#     libraries' launches spread up to 1.7x with 100, 1.1-1.4x with 1000 (docs/perf-history.md).
# -c: the collectives (default: the issue's five); also reduce, scatter and sendrecv (nccl-tests'
#     ring: each rank sends to the next and receives from the one before; MPI_Reduce, MPI_Scatter,
#     MPI_Sendrecv; Gloo's reduce, scatter and unbound-buffer send/recv), and allgatherv,
#     reducescatterv, alltoallv and alltoallvc, timed with equal blocks (OpenHCCL's V perf tools;
#     the MPIs' MPI_Allgatherv, MPI_Reduce_scatter and MPI_Alltoallv; Gloo has no V forms here).
# Run time: about 11 minutes for the defaults on a 2-core machine (docs/perf.md).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tools/bench/bench_lib.sh
source "$ROOT/tools/bench/bench_lib.sh"
BUILD=$ROOT/build
NS="2 4 8"
COLLS="allreduce allgather reducescatter broadcast alltoall"
TRIALS=3
TIMEOUT=300
YIELD=1
PEERS_WANTED="ompi mpich gloo"
MPICH_MAX_N=$(nproc)
# Sizes and iterations per launch: small, 64 KiB, 1 MiB, large (rows 1-4 of a trial's file).
ITERS=1000
MID_ITERS=1000
RANGES=("-b SMALL -e SMALL -w 10 -n ITERS" "-b 64K -e 64K -w 10 -n MIDITERS" "-b 1M -e 1M -w 5 -n 50"
        "-b LARGE -e LARGE -w 2 -n 5")
LARGE=64M
AGG=3

while getopts "n:c:t:y:p:M:i:I:B:L:a:h" opt; do
    case $opt in
    n) NS=$OPTARG ;;
    c) COLLS=$OPTARG ;;
    t) TRIALS=$OPTARG ;;
    y) YIELD=$OPTARG ;;
    p) PEERS_WANTED=$OPTARG ;;
    M) MPICH_MAX_N=$OPTARG ;;
    i) ITERS=$OPTARG ;;
    I) MID_ITERS=$OPTARG ;;
    B) BUILD=$OPTARG ;;
    L) LARGE=$OPTARG ;;
    a) AGG=$OPTARG ;;
    *) usage ;;
    esac
done
[[ $YIELD == 0 || $YIELD == 1 ]] || bad -y "$YIELD" "0 or 1"
[[ $MPICH_MAX_N =~ ^[0-9]+$ ]] || bad -M "$MPICH_MAX_N" "a number"
[[ $ITERS =~ ^[1-9][0-9]*$ ]] || bad -i "$ITERS" "a number >= 1"
[[ $MID_ITERS =~ ^[1-9][0-9]*$ ]] || bad -I "$MID_ITERS" "a number >= 1"
[[ $LARGE =~ ^[1-9][0-9]*[KMG]?$ ]] || bad -L "$LARGE" "a size like 256M"
[[ $AGG == 3 || $AGG == 4 ]] || bad -a "$AGG" "3 (slowest rank) or 4 (span)"
[[ $TRIALS =~ ^[1-9][0-9]*$ ]] || bad -t "$TRIALS" "a number >= 1"
check_rank_counts "$NS"

for c in $COLLS; do perf_name "$c" >/dev/null || exit 2; done

# ---- build what is missing ----------------------------------------------------------------------
targets="hcclrun memcpy_bw"
for c in $COLLS; do targets="$targets $(perf_name "$c")_perf"; done
# shellcheck disable=SC2086 # a list of targets
build_missing $targets
MEMCPY=$BUILD/tools/bench/memcpy_bw

# shellcheck source=tools/bench/compare_peers.sh
source "$ROOT/tools/bench/compare_peers.sh"
peers_setup "$PEERS_WANTED"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# ---- one trial ----------------------------------------------------------------------------------
# Writes "<size> <time_us> <busbw>" rows to $out for small, 64 KiB, 1 MiB and large (RANGES).
# OpenHCCL: the out-of-place half; in place for broadcast (its only form); a fourth field, the
# in-place busbw (N/A for alltoall), for the memcpy table's in-place AllGather.
range_args() { # index coll n
    local s
    s=$(small_size "$2" "$3")
    echo "${RANGES[$1]}" | sed -e "s/SMALL/$s/g" -e "s/MIDITERS/$MID_ITERS/" -e "s/ITERS/$ITERS/" -e "s/LARGE/$LARGE/g"
}

run_oh() { # coll n out
    local i
    : >"$3"
    for i in "${!RANGES[@]}"; do
        oh_rows "$1" "$2" "$(range_args "$i" "$1" "$2")" "$WORK/errors" >>"$3"
    done
}

run_peer() { # peer coll n out
    local i
    : >"$4"
    peer_runs_at "$1" "$3" || return 0
    peer_does "$1" "$2" || return 0
    for i in "${!RANGES[@]}"; do
        peer_rows "$1" "$2" "$3" "$(range_args "$i" "$2" "$3")" "$WORK/errors" >>"$4"
    done
}

memcpy_ref() {
    # nt-copy: the emulated DMA's streaming-store kernel (memcpy_bw -k nt; absent in older builds)
    echo "$("$MEMCPY" -t 1 -s 64M) ; $("$MEMCPY" -t 2 -s 64M) ; $("$MEMCPY" -t 2 -s 64M -k nt 2>/dev/null || echo "nt-copy n/a")"
}

# ---- report helpers -----------------------------------------------------------------------------
# Row r (1-4) of every trial file matching the glob: field f (2 time, 3 busbw) -> median, and the
# slowest/fastest spread of the time.
median_of() { # glob row field
    local vals
    # shellcheck disable=SC2086
    vals=$(for f in $1; do [[ -f $f ]] && awk -v r="$2" -v c="$3" 'NR == r { print $c }' "$f"; done | sort -g)
    [[ -z $vals ]] && { echo "-"; return; }
    echo "$vals" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

spread_of() { # glob row
    # shellcheck disable=SC2086
    for f in $1; do [[ -f $f ]] && awk -v r="$2" 'NR == r { print $2 }' "$f"; done | sort -g |
        awk '{ v[NR] = $1 } END { if (NR && v[1] > 0) printf "%.1f", v[NR] / v[1]; else print "-" }'
}

ratio() { # a b
    awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}

# The best peer at row r of (coll, n): the lowest time (rows 1-2) or highest busbw (rows 3-4).
# Prints "value peer", or "- -" when no peer ran there.
best_peer() { # coll n row
    local p v best="-" who="-" field=$(($3 <= 2 ? 2 : 3))
    for p in "${PEERS[@]}"; do
        v=$(median_of "$WORK/$p.$1.$2.*" "$3" "$field")
        [[ $v == - ]] && continue
        if [[ $best == - ]] || awk -v v="$v" -v b="$best" -v lo=$(($3 <= 2)) 'BEGIN { exit !(lo ? v < b : v > b) }'; then
            best=$v who=$p
        fi
    done
    echo "$best $who"
}

# ---- issue #8's criteria ------------------------------------------------------------------------
# Every row's value for a criterion goes to $WORK/criteria ("key value label"); verdict prints,
# per criterion, pass or FAIL by its worst row, and how many rows failed.
ROW_NAMES=(- small "64 KiB" "1 MiB" "$LARGE")
criterion() { # key value label
    [[ $2 == - ]] || echo "$1 $2 $3" >>"$WORK/criteria"
}

verdict_line() { # key le|ge limit text
    [[ -f $WORK/criteria ]] || return 0
    awk -v k="$1" -v op="$2" -v lim="$3" -v text="$4" '
        $1 == k { v = $2 + 0; lab = $3; for (i = 4; i <= NF; i++) lab = lab " " $i
                  bad += op == "le" ? v > lim : v < lim
                  if (!n++ || (op == "le" ? v > w : v < w)) { w = v; ws = $2; wl = lab } }
        END { if (!n) { printf "#   %s: no row (no peer ran there)\n", text; exit }
              printf "#   %s: %s, worst %s (%s)", text, bad ? "FAIL" : "pass", ws, wl
              if (bad) printf ", %d of %d rows", bad, n
              printf "\n" }' "$WORK/criteria"
}

# Where a spread failed: the command that shows whether the machine or the library moved.
spread_hint() {
    [[ -f $WORK/criteria ]] || return 0
    awk '$1 == "spread" && $2 + 0 > 2 && $2 + 0 > w { w = $2 + 0; c = $3; n = $4 }
         END { if (w) { sub(/^N=/, "", n)
                        printf "#     the machine or the library? tools/bench/drift.sh -c %s -n %s (docs/perf.md)\n", c, n } }' \
        "$WORK/criteria"
}

verdict() {
    echo "# issue #8's criteria, each by its worst row:"
    verdict_line lat2 le 3 "small and 64 KiB at 2 ranks: time / best peer's <= 3"
    verdict_line lat le 1 "small and 64 KiB at more ranks: time / best peer's <= 1"
    verdict_line spread le 2 "small and 64 KiB: slowest / fastest trial <= 2"
    spread_hint
    verdict_line mib ge 1 "1 MiB: busbw / best peer's >= 1"
    verdict_line large ge 2 "$LARGE: busbw / best peer's >= 2"
    verdict_line copy ge 0.7 "$LARGE at 2 ranks, Broadcast, AllGather, AlltoAll: busbw / 2-thread memcpy >= 0.7"
}

# ---- run ----------------------------------------------------------------------------------------
START=$(date +%s)
echo "# compare.sh: N = $NS; collectives: $COLLS; $TRIALS trials each, median kept; $ITERS calls timed at small, $MID_ITERS at 64 KiB; time over ranks: $( ((AGG == 4)) && echo "span, first start to last end (-a 4)" || echo "slowest rank (-a 3)")"
echo "# machine: $(nproc) CPUs, $(uname -srm), load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
for p in "${PEERS[@]}"; do echo "# $p: ${PEER_VERSION[$p]}"; done
for note in "${PEER_NOTES[@]}"; do echo "# $note"; done
MEM_START=$(memcpy_ref)
for n in $NS; do
    for c in $COLLS; do
        for ((t = 1; t <= TRIALS; t++)); do
            run_oh "$c" "$n" "$WORK/oh.$c.$n.$t"
            for p in "${PEERS[@]}"; do run_peer "$p" "$c" "$n" "$WORK/$p.$c.$n.$t"; done
        done
    done
done
MEM_END=$(memcpy_ref)

echo
echo "| coll | N | small B | small us OpenHCCL | best peer | ratio | spread OpenHCCL / peer | 64 KiB us OpenHCCL | best peer | ratio | spread OpenHCCL / peer |" \
     "1 MiB busbw OpenHCCL | best peer | ratio | $LARGE busbw OpenHCCL | best peer | ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for c in $COLLS; do
    for n in $NS; do
        row="| $c | $n | $(small_size "$c" "$n")"
        for r in 1 2 3 4; do
            oh=$(median_of "$WORK/oh.$c.$n.*" "$r" $((r <= 2 ? 2 : 3)))
            read -r best who <<<"$(best_peer "$c" "$n" "$r")"
            peer_cell=$best
            [[ $who == - ]] || peer_cell="$best $who"
            rt=$(ratio "$oh" "$best")
            row="$row | $oh | $peer_cell | $rt"
            if ((r <= 2)); then
                sp=$(spread_of "$WORK/oh.$c.$n.*" "$r")
                row="$row | $sp / $(spread_of "$WORK/$who.$c.$n.*" "$r")"
                criterion "$( ((n == 2)) && echo lat2 || echo lat)" "$rt" "$c N=$n ${ROW_NAMES[r]}"
                criterion spread "$sp" "$c N=$n ${ROW_NAMES[r]}"
            else
                criterion "$( ((r == 3)) && echo mib || echo large)" "$rt" "$c N=$n ${ROW_NAMES[r]}"
            fi
        done
        echo "$row |"
    done
done

echo
echo "| coll | N | small us | 64 KiB us | 1 MiB busbw | $LARGE busbw |"
echo "|---|---|---|---|---|---|"
for c in $COLLS; do
    for n in $NS; do
        row="| $c | $n"
        for r in 1 2 3 4; do
            cell=$(median_of "$WORK/oh.$c.$n.*" "$r" $((r <= 2 ? 2 : 3)))
            for p in "${PEERS[@]}"; do cell="$cell / $(median_of "$WORK/$p.$c.$n.*" "$r" $((r <= 2 ? 2 : 3)))"; done
            row="$row | $cell"
        done
        echo "$row |"
    done
done
echo "# each cell: OpenHCCL${PEERS[*]:+$(printf ' / %s' "${PEERS[@]}")}, medians of the trials; - where a library did not run"

# Copy-bound collectives at 2 ranks against the 2-thread memcpy (issue #8: busbw >= 0.7x). Per
# busbw byte they must move as much memory (reads plus writes) as memcpy copying: Broadcast (in
# place) 1 byte; AllGather out of place 3 (each rank reads its block once and writes it into both
# outputs), in place 2 (each rank's block is in its output already: only the other's is copied);
# AlltoAll 4 (each rank reads both its blocks and writes them into the two outputs). The last
# column is that traffic as a share of memcpy's.
mem_field() { # memcpy_ref line, part (1: 1-thread memcpy, 2: 2-thread memcpy, 3: 2-thread nt-copy) -> GB/s
    echo "$1" | awk -F';' -v p="$2" '{ n = split($p, f, " "); print f[n] }'
}

copy_table() {
    local m1 m2 mem nt c bw per field traffic
    m1=$(mem_field "$MEM_START" 2)
    m2=$(mem_field "$MEM_END" 2)
    mem=$(awk -v a="$m1" -v b="$m2" 'BEGIN { printf "%.2f", (a + b) / 2 }')
    nt=$(awk -v a="$(mem_field "$MEM_START" 3)" -v b="$(mem_field "$MEM_END" 3)" \
        'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", (a + b) / 2; else print "-" }')
    echo
    echo "| coll at 2 ranks, $LARGE | busbw | 2-thread memcpy GB/s (start, end: mean) | busbw / memcpy | memcpy bytes per busbw byte | traffic / memcpy's | traffic / nt-copy's ($nt) |"
    echo "|---|---|---|---|---|---|---|"
    for c in broadcast allgather "allgather in place" alltoall; do
        [[ " $COLLS " == *" ${c%% *} "* ]] || continue
        case $c in
        broadcast) per=1 field=3 ;;
        allgather) per=3 field=3 ;;
        "allgather in place") per=2 field=4 ;;
        alltoall) per=4 field=3 ;;
        esac
        bw=$(median_of "$WORK/oh.${c%% *}.2.*" 4 $field)
        traffic=$(awk -v b="$bw" -v p=$per 'BEGIN { print (b == "-") ? "-" : b * p }')
        [[ $c == "allgather in place" ]] || criterion copy "$(ratio "$bw" "$mem")" "$c"
        echo "| $c | $bw | $m1, $m2: $mem | $(ratio "$bw" "$mem") | $per | $(ratio "$traffic" "$mem") | $(ratio "$traffic" "$nt") |"
    done
}
[[ " $NS " == *" 2 "* ]] && copy_table
echo
echo "# latency ratio = OpenHCCL / best peer's time (lower is better); busbw ratio = OpenHCCL / best peer's (higher is better)"
echo "# spread = slowest / fastest trial at that size, OpenHCCL / the best peer (issue #8: OpenHCCL's within 2x)"
verdict
echo "# host memcpy 64 MiB at start: $MEM_START"
echo "# host memcpy 64 MiB at end:   $MEM_END"
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg); run time $(($(date +%s) - START)) s"
if [[ -s $WORK/errors ]]; then
    echo "# errors (first lines):"
    head -5 "$WORK/errors" | sed 's/^/#   /'
fi
