#!/usr/bin/env bash
# drift.sh: is a spread between launches the library's or the machine's? It launches OpenHCCL's
# perf tool and every peer's benchmark in turn, for one collective at one size, round after round a
# few seconds apart, each launch timed as compare.sh times it (back-to-back calls after a barrier,
# one synchronize, host clock, the slowest rank). One line per round: the clock, then each
# library's us a call. Then per library the fastest, median and slowest launch, slowest / fastest,
# and how closely its series follows OpenHCCL's: the rank correlation of the two series (near 1:
# they slow down and speed up together, the machine's doing; near 0: each its own).
#
# On the 2-core VM of docs/perf-history.md, 32 B AlltoAll at 2 ranks has modes that last a minute or more
# (0.38, 0.63 and 1.0 us a call), and OpenHCCL, Open MPI and MPICH change mode at the same moment:
# a spread above 2 between compare.sh's trials can be the machine's (docs/perf-history.md, twenty-seventh
# pass).
#
# Usage: tools/bench/drift.sh [-c coll (alltoall)] [-n ranks (2)] [-b bytes (the small size)]
#                             [-i iters (1000)] [-r rounds (40)] [-s seconds between rounds (3)]
#                             [-p "ompi mpich gloo"] [-y 0|1] [-M max_mpich_ranks] [-B build]
#                             [-a 3|4] [-S series_file]
# -c, -n, -p, -y, -M, -B, -a: as compare.sh's. -b: default compare.sh's small size (8 B for
# allreduce and broadcast, 16 B per rank for the others). -S: no run; the summary of a series saved
# from an earlier run (its "# time" header line and its rounds).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tools/bench/bench_lib.sh
source "$ROOT/tools/bench/bench_lib.sh"
BUILD=$ROOT/build
COLL=alltoall
N=2
BYTES=
ITERS=1000
ROUNDS=40
SLEEP_S=3
TIMEOUT=300
YIELD=1
PEERS_WANTED="ompi mpich gloo"
MPICH_MAX_N=$(nproc)
AGG=3
SERIES=

while getopts "c:n:b:i:r:s:p:y:M:B:a:S:h" opt; do
    case $opt in
    c) COLL=$OPTARG ;;
    n) N=$OPTARG ;;
    b) BYTES=$OPTARG ;;
    i) ITERS=$OPTARG ;;
    r) ROUNDS=$OPTARG ;;
    s) SLEEP_S=$OPTARG ;;
    p) PEERS_WANTED=$OPTARG ;;
    y) YIELD=$OPTARG ;;
    M) MPICH_MAX_N=$OPTARG ;;
    B) BUILD=$OPTARG ;;
    a) AGG=$OPTARG ;;
    S) SERIES=$OPTARG ;;
    *) usage ;;
    esac
done
[[ $N =~ ^[1-9][0-9]*$ && $N -ge 2 ]] || bad -n "$N" "a rank count >= 2"
[[ -z $BYTES || $BYTES =~ ^[1-9][0-9]*[KMG]?$ ]] || bad -b "$BYTES" "a size like 32 or 64K"
[[ $ITERS =~ ^[1-9][0-9]*$ ]] || bad -i "$ITERS" "a number >= 1"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || bad -r "$ROUNDS" "a number >= 1"
[[ $SLEEP_S =~ ^[0-9]+$ ]] || bad -s "$SLEEP_S" "whole seconds"
[[ $YIELD == 0 || $YIELD == 1 ]] || bad -y "$YIELD" "0 or 1"
[[ $MPICH_MAX_N =~ ^[0-9]+$ ]] || bad -M "$MPICH_MAX_N" "a number"
[[ $AGG == 3 || $AGG == 4 ]] || bad -a "$AGG" "3 (slowest rank) or 4 (span)"


# ---- summary --------------------------------------------------------------------------------------
# Column c of the series (2: OpenHCCL): fastest, median, slowest, slowest / fastest.
column_stats() { # series c
    awk -v c="$2" '!/^#/ && $c != "-" && $c + 0 > 0 { print $c }' "$1" | sort -g |
        awk '{ v[NR] = $1 } END { if (!NR) { print "- - - -"; exit }
                                  printf "%s %s %s %.1f\n", v[1], v[int((NR + 1) / 2)], v[NR], v[NR] / v[1] }'
}

# Ranks of the values on stdin (1 the fastest; ties share their mean rank), in input order.
ranks() {
    awk '{ print NR, $1 }' | sort -k2,2g |
        awk '{ at[NR] = $1; v[NR] = $2 }
             END { for (a = 1; a <= NR; a = b) { for (b = a; b <= NR && v[b] == v[a]; b++);
                                                 for (k = a; k < b; k++) print at[k], (a + b - 1) / 2 } }' |
        sort -k1,1n | awk '{ print $2 }'
}

# Rank correlation (Spearman's) of column 2 and column c over the rounds where both ran: a single
# launch caught in a stall moves it by one rank, not by its size. "-" with fewer than 3 such rounds
# or a series that never changed.
correlation() { # series c
    local both
    both=$(awk -v c="$2" '!/^#/ && $2 != "-" && $c != "-" && $2 + 0 > 0 && $c + 0 > 0 { print $2, $c }' "$1")
    [[ -n $both ]] || { echo -; return; }
    paste -d' ' <(cut -d' ' -f1 <<<"$both" | ranks) <(cut -d' ' -f2 <<<"$both" | ranks) |
        awk '{ x = $1; y = $2; n++; sx += x; sy += y; sxx += x * x; syy += y * y; sxy += x * y }
             END { vx = n * sxx - sx * sx; vy = n * syy - sy * sy
                   if (n < 3 || vx <= 0 || vy <= 0) print "-"; else printf "%.2f\n", (n * sxy - sx * sy) / sqrt(vx * vy) }'
}

summary() { # series
    local head c lib lo mid hi sp corr
    local -a cols
    head=$(grep -m1 '^# time ' "$1") || { echo "drift.sh: no '# time' header line in $1" >&2; exit 2; }
    read -r -a cols <<<"${head#\# time }"
    echo "# per library over the rounds: fastest, median and slowest launch (us a call), slowest / fastest,"
    echo "# and the rank correlation of its times with OpenHCCL's, round by round"
    echo "| library | fastest | median | slowest | slowest / fastest | correlation with openhccl |"
    echo "|---|---|---|---|---|---|"
    for c in "${!cols[@]}"; do
        lib=${cols[c]}
        read -r lo mid hi sp <<<"$(column_stats "$1" $((c + 2)))"
        corr=-
        ((c == 0)) || corr=$(correlation "$1" $((c + 2)))
        echo "| $lib | $lo | $mid | $hi | $sp | $corr |"
    done
}

if [[ -n $SERIES ]]; then
    [[ -r $SERIES ]] || { echo "drift.sh: cannot read the series '$SERIES'" >&2; exit 2; }
    summary "$SERIES"
    exit 0
fi

# ---- run ------------------------------------------------------------------------------------------
perf_name "$COLL" >/dev/null || exit 2
[[ -n $BYTES ]] || BYTES=$(small_size "$COLL" "$N")
build_missing hcclrun "$(perf_name "$COLL")_perf"
# shellcheck source=tools/bench/compare_peers.sh
source "$ROOT/tools/bench/compare_peers.sh"
peers_setup "$PEERS_WANTED"
LIBS=()
for p in "${PEERS[@]}"; do peer_runs_at "$p" "$N" && peer_does "$p" "$COLL" && LIBS+=("$p"); done

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
ARGS="-b $BYTES -e $BYTES -w 10 -n $ITERS"
first_time() { awk 'NR == 1 { print $2 } END { if (!NR) print "-" }'; }

echo "# drift.sh: $COLL $BYTES B at $N ranks, $ITERS calls a launch, $ROUNDS rounds ${SLEEP_S} s apart; us a call, $( ((AGG == 4)) && echo "span over ranks (-a 4)" || echo "slowest rank (-a 3)")"
echo "# machine: $(nproc) CPUs, $(uname -srm), load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
for p in "${LIBS[@]}"; do echo "# $p: ${PEER_VERSION[$p]}"; done
for note in "${PEER_NOTES[@]}"; do echo "# $note"; done
echo "# time openhccl${LIBS[*]:+ ${LIBS[*]}}" | tee "$WORK/series"
for ((r = 1; r <= ROUNDS; r++)); do
    line="$(date +%T) $(oh_rows "$COLL" "$N" "$ARGS" "$WORK/errors" | first_time)"
    for p in "${LIBS[@]}"; do line="$line $(peer_rows "$p" "$COLL" "$N" "$ARGS" "$WORK/errors" | first_time)"; done
    echo "$line" | tee -a "$WORK/series"
    ((r < ROUNDS)) && sleep "$SLEEP_S"
done
echo
summary "$WORK/series"
if [[ -s $WORK/errors ]]; then
    echo "# errors of the launches (first lines):"
    head -5 "$WORK/errors" | sed 's/^/#   /'
fi
