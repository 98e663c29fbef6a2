#!/usr/bin/env bash
# callcount.sh: the host path's length without the clock's noise. Wall-clock latency on the 2-core
# VM of docs/perf.md swings +-30% from launch to launch; the instructions a rank executes per call
# move much less (below). So it runs OpenHCCL's perf tool and Open MPI's benchmark (compare.sh's
# mpi_coll_bench, launched as compare_peers.sh launches it) under valgrind's callgrind, same
# collective, size and N, each twice: I1 and I2 timed calls (-i). Per rank, instructions a call =
# (Ir at I2 - Ir at I1) / (calls at I2 - calls at I1): Ir is the total callgrind counted in the
# process (every thread), the calls are those callgrind counted into the API function
# (HcclBroadcast, HcclAllReduce, ..., HcclBatchSendRecv for sendrecv; MPI_Bcast or its alias
# PMPI_Bcast, MPI_Reduce_scatter_block, ...). The difference cancels start-up, warm-up, the timing
# barriers and reductions; counting the calls instead of assuming them covers the perf tools that
# time two halves (out of place and in place) and broadcast_perf, which times one.
#
# Instructions are not time, only a proxy for the host path: no cache misses, no system call's
# cost, no waiting. And a wait's spinning is counted: under valgrind a process's threads run one
# at a time, the ranks share the cores, and a rank waiting for a peer polls, yields (Open MPI with
# mpi_yield_when_idle, OpenHCCL's notify waits: spin for a while, then yield, then block) and
# counts whatever it executed meanwhile. Compare like for like (same N, same size, same machine),
# and read the top functions (-t) before calling a difference the path's: a poll loop near the top
# is waiting, not work. How much waiting moves a count, on the 2-core VM: broadcast 8 B at 4 ranks,
# seven runs: OpenHCCL's root 2654 in six and 2840 in one, its other ranks 2113-2437, Open MPI's
# root 1220-1361 and total 5120-5480; scatter 32 B at 2 ranks, ten runs: OpenHCCL's root 2626-3377,
# rank 1 2229-3396 (emu_flag_do_wait, pthread_mutex_lock among its top functions when high). Rerun,
# and take the lowest counts, before reading a difference under 20-30%.
# The counts are those of the code valgrind's CPU selects (libc's AVX2 variants; no AVX-512).
#
# OpenHCCL runs with HCCL_NET=roce. Unset (auto, TCP without an RDMA device), every communicator
# starts its TCP links' io_uring thread, whose io_uring_enter wait valgrind 3.19 does not treat as
# blocking: that thread keeps valgrind's lock and the process deadlocks. With roce and no RDMA
# device the links are not prepared, which on one server is not fatal (nothing crosses a server);
# each rank prints one "[OpenHCCL ERROR] net: HCCL_NET=roce but no RDMA device" line, which is
# left out of what this script shows.
#
# Output: a header (this command, valgrind's version, the machine); then per collective, N and size
# one row per library: "lib N bytes rank0 rank1 ... total", instructions a call (rank r: the process
# whose RANK, hcclrun's, or OMPI_COMM_WORLD_RANK was r; callgrind names its file after it; rank 0
# is the root of broadcast, reduce and scatter for both), and the ratio of the totals, OpenHCCL /
# Open MPI. With -t K, also the K functions with the most self instructions a call on each
# library's ranks 0 and 1 (callgrind_annotate's function lists of both launches, differenced).
# Run time: two launches per library, collective and N, each timed in the output; on the 2-core VM
# with the default -i, broadcast 8 B at 4 ranks: OpenHCCL's two launches 3-8 s, Open MPI's 9-20 s
# (mpirun's start-up under valgrind), the whole run 16-30 s; -c "allreduce scatter" -n 2: 16-20 s.
#
# Usage: tools/bench/callcount.sh [-c "colls" (broadcast)] [-n "Ns" ("2 4")] [-b bytes]
#                                 [-i "I1 I2" ("2000 12000")] [-t K (0)] [-p "ompi" | -p ""]
#                                 [-y 0|1] [-T seconds (600)] [-B build] [-k]
# -c: as compare.sh's (allreduce allgather reducescatter broadcast alltoall reduce scatter sendrecv
#     allgatherv reducescatterv alltoallv alltoallvc). -b: one size for all (K/M/G suffix); default
#     compare.sh's small size (8 B for allreduce, broadcast, reduce and sendrecv, 16 B per rank for
#     the others). -p "": OpenHCCL only (Open MPI is the only peer here). -y: Open MPI's
#     mpi_yield_when_idle, as compare.sh's (default 1; with -y 0 its waits poll and its counts are
#     the polls': allgather 1 KiB at 2 ranks read -5639 and 14614). -T: the limit of each launch.
#     -k: keep the callgrind files and the launches' output (their directory is printed; default: a
#     temporary directory, removed at the end). Needs valgrind (apt-get install -y valgrind).
# Exit status: 0; 1 when a launch failed (its row shows "-", and the end of its output is shown) or
# a rank had no call counted; 2 on a bad flag, a missing tool or a failed build.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tools/bench/bench_lib.sh
source "$ROOT/tools/bench/bench_lib.sh"
BUILD=$ROOT/build
COLLS=broadcast
NS="2 4"
BYTES=
ITERS="2000 12000"
TOP=0
PEERS_WANTED=ompi
YIELD=1
TIMEOUT=600
KEEP=0
FAILED=0

CMDLINE="tools/bench/callcount.sh$(printf ' %q' "$@")"
while getopts "c:n:b:i:t:p:y:T:B:kh" opt; do
    case $opt in
    c) COLLS=$OPTARG ;;
    n) NS=$OPTARG ;;
    b) BYTES=$OPTARG ;;
    i) ITERS=$OPTARG ;;
    t) TOP=$OPTARG ;;
    p) PEERS_WANTED=$OPTARG ;;
    y) YIELD=$OPTARG ;;
    T) TIMEOUT=$OPTARG ;;
    B) BUILD=$OPTARG ;;
    k) KEEP=1 ;;
    *) usage ;;
    esac
done
((OPTIND > $#)) || bad "the arguments" "${*:OPTIND}" "flags only"
[[ -n ${COLLS// /} ]] || bad -c "$COLLS" "one collective or more"
[[ -n ${NS// /} ]] || bad -n "$NS" "one rank count or more"
check_rank_counts "$NS"
[[ -z $BYTES || $BYTES =~ ^[1-9][0-9]*[KMG]?$ ]] || bad -b "$BYTES" "a size like 32 or 64K"
read -r I1 I2 EXTRA <<<"$ITERS"
[[ ${I1:-} =~ ^[1-9][0-9]*$ && ${I2:-} =~ ^[1-9][0-9]*$ && -z ${EXTRA:-} && I1 -lt I2 ]] ||
    bad -i "$ITERS" "two call counts \"I1 I2\", I1 < I2"
[[ $TOP =~ ^[0-9]+$ ]] || bad -t "$TOP" "a number >= 0"
for p in $PEERS_WANTED; do
    [[ $p == ompi ]] || bad -p "$PEERS_WANTED" "\"ompi\" or \"\" (Open MPI is the only peer here)"
done
[[ $YIELD == 0 || $YIELD == 1 ]] || bad -y "$YIELD" "0 or 1"
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || bad -T "$TIMEOUT" "whole seconds >= 1"

if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
    echo "callcount.sh: needs valgrind and callgrind_annotate (apt-get install -y valgrind)" >&2
    exit 2
fi

for c in $COLLS; do perf_name "$c" >/dev/null || exit 2; done
# shellcheck disable=SC2046 # one target per collective
build_missing hcclrun $(for c in $COLLS; do echo "$(perf_name "$c")_perf"; done)
# shellcheck source=tools/bench/compare_peers.sh
source "$ROOT/tools/bench/compare_peers.sh"
peers_setup "$PEERS_WANTED"
LIBS=(openhccl "${PEERS[@]}")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/callcount.XXXXXX")
trap '((KEEP)) || rm -rf "$WORK"' EXIT

# ---- one launch -----------------------------------------------------------------------------------
# The API function whose calls are counted (tools/perf/perf_ops.c, tools/bench/mpi_coll_bench.c;
# sendrecv_perf's default, -s 0, makes one HcclBatchSendRecv of the send and the receive).
api_fn() { # lib coll
    if [[ $1 == openhccl ]]; then
        case $2 in
        allreduce) echo HcclAllReduce ;; allgather) echo HcclAllGather ;;
        reducescatter) echo HcclReduceScatter ;; broadcast) echo HcclBroadcast ;;
        alltoall) echo HcclAlltoAll ;; reduce) echo HcclReduce ;; scatter) echo HcclScatter ;;
        sendrecv) echo HcclBatchSendRecv ;; allgatherv) echo HcclAllGatherV ;;
        reducescatterv) echo HcclReduceScatterV ;; alltoallv) echo HcclAlltoAllV ;;
        alltoallvc) echo HcclAlltoAllVC ;;
        esac
    else
        case $2 in
        allreduce) echo MPI_Allreduce ;; allgather) echo MPI_Allgather ;;
        reducescatter) echo MPI_Reduce_scatter_block ;; broadcast) echo MPI_Bcast ;;
        alltoall) echo MPI_Alltoall ;; reduce) echo MPI_Reduce ;; scatter) echo MPI_Scatter ;;
        sendrecv) echo MPI_Sendrecv ;; allgatherv) echo MPI_Allgatherv ;;
        reducescatterv) echo MPI_Reduce_scatter ;; alltoallv | alltoallvc) echo MPI_Alltoallv ;;
        esac
    fi
}

# The same as a regular expression over callgrind's function names: Open MPI's MPI_X is a weak
# alias of PMPI_X, either name may show; a "'2" suffix is callgrind's name for a recursion level.
api_re() { # lib coll
    local f
    f=$(api_fn "$1" "$2")
    [[ $1 == openhccl ]] || f="P?$f"
    echo "^$f('[0-9]+)?\$"
}

# Runs lib's benchmark on n ranks under callgrind, `iters` timed calls of `bytes`: rank r's
# callgrind file is out.r.<pid>, the launch's output out.log. Returns the launch's status.
launch() { # lib coll n bytes iters out
    local -a cmd
    if [[ $1 == openhccl ]]; then
        # HCCL_NET=roce: without it each communicator's TCP link starts an io_uring thread whose
        # wait valgrind does not see as blocking, and the rank deadlocks (see the header).
        HCCL_NET=roce timeout "$TIMEOUT" "$BUILD/tools/hcclrun" -n "$3" --timeout "$TIMEOUT" \
            valgrind --tool=callgrind "--callgrind-out-file=$6.%q{RANK}.%p" \
            "$BUILD/tools/perf/$(perf_name "$2")_perf" -b "$4" -e "$4" -w 10 -n "$5" -c 0 -m 0 >"$6.log" 2>&1
    else
        peer_command "$1" "$3" # mpirun and its flags, -n N, the benchmark: valgrind goes before it
        cmd=("${PEER_CMD[@]:0:${#PEER_CMD[@]}-1}" valgrind --tool=callgrind
             "--callgrind-out-file=$6.%q{OMPI_COMM_WORLD_RANK}.%p" "${PEER_CMD[-1]}")
        timeout "$TIMEOUT" "${cmd[@]}" -c "$2" -b "$4" -e "$4" -w 10 -n "$5" -a 3 >"$6.log" 2>&1
    fi
}

# "Ir calls" of callgrind files (one rank): the total instructions (totals:, else summary:), and the
# calls into the function matching re, summed over every call edge (cfn= then calls=COUNT); the
# largest count over the matching names (MPI_X and PMPI_X are one function, whichever name it has).
cg_counts() { # re file...
    awk -v re="$1" '
        FNR == 1 { cur = ""; if (NR > 1) done() }
        /^summary:/ { sum = $2 }
        /^totals:/ { tot = $2 }
        /^c?fn=\(/ { id = $1; sub(/^c?fn=\(/, "", id); sub(/\).*/, "", id)
                     name = $0; if (sub(/^c?fn=\([0-9]+\) /, "", name)) names[id] = name
                     if (/^cfn=/) cur = names[id]
                     next }
        /^fn=/ { next }
        /^calls=/ && cur ~ re { c = $1; sub(/^calls=/, "", c); calls[cur] += c }
        function done() { ir += tot != "" ? tot : sum; tot = sum = ""; delete names }
        END { if (NR) done(); m = 0; for (k in calls) if (calls[k] > m) m = calls[k]; print ir + 0, m }' "${@:2}"
}

# "Ir<TAB>function (object)" per function of a callgrind file, self instructions. callgrind_annotate
# lists a function once per source file its code came from (inlined headers, LTO), naming the
# object only on the first: summed by name.
cg_functions() { # file
    callgrind_annotate --threshold=100 --auto=no "$1" 2>/dev/null | awk '
        /^Ir +file:function/ { on = 1; next }
        on && /^ *[0-9][0-9,]* / { ir = $1; gsub(/,/, "", ir)
                                   f = $0; sub(/^ *[0-9,]+ +(\([^)]*\) +)?/, "", f); sub(/^[^:]*:/, "", f)
                                   o = ""; if (match(f, / \[[^]]*\]$/)) { o = substr(f, RSTART + 2, RLENGTH - 3)
                                                                          sub(/.*\//, "", o); f = substr(f, 1, RSTART - 1) }
                                   self[f] += ir; if (o != "") obj[f] = o }
        END { for (f in self) printf "%s\t%s%s\n", self[f], f, f in obj ? " (" obj[f] ")" : "" }'
}

# The output of a launch, without what every launch prints: the roce line (see the header), hwloc's
# note under valgrind, valgrind's banner.
shown_output() { # log
    grep -v -e 'HCCL_NET=roce but no RDMA device' -e 'hwloc x86 backend' -e 'HWLOC_CPUID_PATH' \
        -e '== Copyright (C)' -e '== Using Valgrind' -e "== For interactive control" -e '== *$' "$1" |
        tail -12 | sed 's/^/#   /'
}

# ---- one library at one point: two launches -------------------------------------------------------
# Writes out.rows ("rank Ir_a_call calls", or "rank - -" where a rank's files are missing) and, with
# -t, out.top.r for ranks 0 and 1; prints notes ("# ..." lines) on stdout; sets FAILED=1 when a
# launch failed or a rank has no count.
measure() { # lib coll n bytes out
    local lib=$1 coll=$2 n=$3 bytes=$4 out=$5 re it r t0 a b dc ok=1
    local -a secs f1 f2
    re=$(api_re "$lib" "$coll")
    for it in "$I1" "$I2"; do
        t0=$EPOCHREALTIME
        launch "$lib" "$coll" "$n" "$bytes" "$it" "$out.$it"
        a=$?
        secs+=("$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')")
        if ((a != 0)); then
            ok=0
            echo "# $lib: the launch of $it calls failed (status $a$( ((a == 124)) && echo ", -T $TIMEOUT s reached"))," \
                "the end of its output:"
            shown_output "$out.$it.log"
        fi
    done
    : >"$out.rows"
    for ((r = 0; r < n; r++)); do
        f1=("$out.$I1.$r".*) f2=("$out.$I2.$r".*)
        if ((!ok)) || [[ ! -s ${f1[0]} || ! -s ${f2[0]} ]]; then
            echo "$r - -" >>"$out.rows"
            continue
        fi
        a=$(cg_counts "$re" "${f1[@]}") b=$(cg_counts "$re" "${f2[@]}")
        awk -v r="$r" '{ dc = $4 - $2; if (dc > 0) printf "%d %.0f %d\n", r, ($3 - $1) / dc, dc
                         else print r, "-", dc }' <<<"$a $b" >>"$out.rows"
        dc=$(tail -1 "$out.rows" | cut -d' ' -f3)
        if ((TOP > 0 && r < 2 && dc > 0)); then
            cg_functions "${f1[0]}" >"$out.fn1"
            cg_functions "${f2[0]}" >"$out.fn2"
            awk -F'\t' -v dc="$dc" '
                NR == FNR { a[$2] = $1; next } { b[$2] = $1 }
                END { for (f in b) printf "%.0f\t%s\n", (b[f] - a[f]) / dc, f
                      for (f in a) if (!(f in b)) printf "%.0f\t%s\n", -a[f] / dc, f }' \
                "$out.fn1" "$out.fn2" | sort -t$'\t' -k1,1gr | head -"$TOP" >"$out.top.$r"
        fi
    done
    dc=$(awk '$3 != "-" && $3 > 0 { print $3 }' "$out.rows" | sort -u | paste -sd/ -)
    if ((!ok)) || [[ -z $dc ]] || grep -q ' - ' "$out.rows"; then FAILED=1; fi
    if [[ -n $dc ]]; then
        dc="$dc more calls of $(api_fn "$lib" "$coll") at $I2 than at $I1 timed calls, per rank"
    else
        dc="no calls of $(api_fn "$lib" "$coll") counted"
    fi
    echo "# $lib: $dc; launches ${secs[0]} s and ${secs[1]} s"
}

# ---- run ------------------------------------------------------------------------------------------
echo "# $CMDLINE"
echo "# $(valgrind --version) (callgrind); instructions a call per rank:" \
    "(Ir at $I2 - Ir at $I1 timed calls) / (API calls at $I2 - at $I1)"
echo "# machine: $(nproc) CPUs, $(uname -srm), load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
for p in "${PEERS[@]}"; do echo "# $p: ${PEER_VERSION[$p]}"; done
for note in "${PEER_NOTES[@]}"; do echo "# $note"; done
((KEEP)) && echo "# callgrind files and launch output kept in $WORK"
for coll in $COLLS; do
    for n in $NS; do
        bytes=${BYTES:-$(small_size "$coll" "$n")}
        echo
        echo "# $coll, $n ranks, $bytes B: instructions a call"
        for lib in "${LIBS[@]}"; do measure "$lib" "$coll" "$n" "$bytes" "$WORK/$lib.$coll.$n.$bytes"; done
        echo "# lib N bytes$(for ((r = 0; r < n; r++)); do printf ' rank%d' "$r"; done) total"
        declare -A TOTAL=()
        for lib in "${LIBS[@]}"; do
            row=$(awk -v lib="$lib" -v n="$n" -v b="$bytes" '
                      { v[NR] = $2; if ($2 == "-") bad = 1; else t += $2 }
                      END { printf "%s %s %s", lib, n, b; for (i = 1; i <= NR; i++) printf " %s", v[i]
                            if (bad || !NR) print " -"; else printf " %d\n", t }' "$WORK/$lib.$coll.$n.$bytes.rows")
            echo "$row"
            TOTAL[$lib]=${row##* }
        done
        for p in "${PEERS[@]}"; do
            if [[ ${TOTAL[openhccl]} != - && ${TOTAL[$p]} != - ]]; then
                echo "# openhccl / $p (total):" \
                    "$(awk -v a="${TOTAL[openhccl]}" -v b="${TOTAL[$p]}" 'BEGIN { printf "%.2f", a / b }')"
            fi
        done
        if ((TOP > 0)); then
            for lib in "${LIBS[@]}"; do
                for r in 0 1; do
                    t=$WORK/$lib.$coll.$n.$bytes.top.$r
                    [[ -s $t ]] || continue
                    echo "# $lib rank $r: the $TOP functions with the most self instructions a call"
                    while IFS=$'\t' read -r ir fn; do
                        printf '#   %7s  %s\n' "$ir" "$fn"
                    done <"$t"
                done
            done
        fi
    done
done
exit "$FAILED"
