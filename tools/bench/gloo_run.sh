#!/usr/bin/env bash
# gloo_run.sh: starts N ranks of a Gloo program on this machine (tools/bench/gloo_coll_bench.cc),
# what mpirun is to mpi_coll_bench. Every rank gets GLOO_RANK (0..N-1), GLOO_SIZE (N) and
# GLOO_STORE_DIR, a fresh empty directory (mktemp -d) for Gloo's FileStore rendezvous, removed on
# exit. Rank 0's stdout is this script's stdout (inherited, not relayed: nothing copies output
# while a rank times a loop), the other ranks' stdout is dropped; every rank's stderr is this
# script's stderr. When a rank fails, or the timeout passes first, it kills the ranks it started
# (by their pids: SIGTERM, SIGKILL 2 s later), says why, and exits non-zero.
#
# Usage: tools/bench/gloo_run.sh -n N [-t timeout_s] prog [args...]
#   -n N          number of ranks (>= 1)
#   -t timeout_s  wall-clock limit for the whole run, seconds (default 300)
# Exit: 0 all ranks exited 0; a failed rank's status (1 if it died of a signal); 124 timeout;
#       2 bad usage or no store directory.
# Example: tools/bench/gloo_run.sh -n 4 ./gloo_coll_bench -c allreduce -b 8 -e 64K -f 8192
# Needs bash >= 4.1 (a {var} file descriptor).
set -u

N=
TIMEOUT=300

usage() {
    sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

while getopts "n:t:h" opt; do
    case $opt in
    n) N=$OPTARG ;;
    t) TIMEOUT=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "gloo_run.sh: -n must be a number >= 1, got '$N'" >&2; exit 2; }
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || { echo "gloo_run.sh: -t must be whole seconds >= 1, got '$TIMEOUT'" >&2; exit 2; }
(($# >= 1)) || { echo "gloo_run.sh: no program given" >&2; usage; }
((BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 1))) ||
    { echo "gloo_run.sh: needs bash >= 4.1 ({var} file descriptors), this is $BASH_VERSION" >&2; exit 2; }

STORE=$(mktemp -d "${TMPDIR:-/tmp}/gloo_store.XXXXXX") || { echo "gloo_run.sh: mktemp -d failed" >&2; exit 2; }
if ! mkfifo "$STORE/nap" || ! exec {NAP}<>"$STORE/nap"; then
    echo "gloo_run.sh: no FIFO in $STORE" >&2
    rm -rf "$STORE"
    exit 2
fi
declare -A RANK_OF=()   # pid -> rank, of the ranks not yet waited for
declare -A BORN=()      # pid -> its start time (/proc/PID/stat field 22), to tell a reused pid apart
WATCHDOG=
PID=
RC=
PSTATE=

# Sets PSTATE to the state and the start time of process $1 ("S 12345"), empty when it is gone
# (no command substitution: this runs every 0.2 s per rank and need not fork).
proc_state() {
    local stat
    PSTATE=
    read -r stat 2>/dev/null <"/proc/$1/stat" || return 0
    read -r -a stat <<<"${stat##*) }" # fields 3.. of stat: the state, ..., the start time (22)
    PSTATE="${stat[0]} ${stat[19]}"
}

# Whether rank pid $1 has ended: a zombie, already reaped by bash (gone from /proc), or reaped and
# its pid taken by another process since (pids wrap at 32768 here, and threads take them too: the
# ranks of other tests start hundreds of threads a second).
ended() {
    proc_state "$1"
    [[ -z $PSTATE || ${PSTATE:0:1} == Z || (-n ${BORN[$1]:-} && ${PSTATE#* } != "${BORN[$1]}") ]]
}

# Sets PID and RC to a rank, or the timer $1, that has ended; PID empty: none yet (it naps 0.2 s
# first). It looks rather than `wait -n`: that misses a job which ended just before the call (bash
# 5.2), and a rank ending between a look and the wait was seen only when the timer fired (a run of
# test_bench_tools waited its 600 s). A plain `wait PID` still has an ended job's status, also of a
# job killed by a signal, which bash drops from its job table once it has reported it.
next_ended() {
    local p
    for p in "${!RANK_OF[@]}" ${1:+"$1"}; do
        ended "$p" || continue
        wait "$p" 2>/dev/null
        RC=$? PID=$p
        return
    done
    PID=
    read -r -t 0.2 -u "$NAP" _ 2>/dev/null  # a FIFO nobody writes: a nap without a process
}

# Drops the ranks that have ended from RANK_OF: a pid that is another process's now is not ours to kill.
# shellcheck disable=SC2317 # called from stop_all
forget_ended() {
    local p
    for p in "${!RANK_OF[@]}"; do
        ended "$p" || continue
        wait "$p" 2>/dev/null
        unset "RANK_OF[$p]"
    done
}

# Kills the ranks still running, by pid: SIGTERM, SIGKILL for those alive 2 s later.
# shellcheck disable=SC2317 # called from the EXIT trap
stop_all() {
    local grace
    [[ -n $WATCHDOG ]] && kill "$WATCHDOG" 2>/dev/null
    WATCHDOG=
    forget_ended
    ((${#RANK_OF[@]})) || return 0
    kill -TERM "${!RANK_OF[@]}" 2>/dev/null
    sleep 2 &
    grace=$!
    while ((${#RANK_OF[@]})); do
        next_ended "$grace"
        [[ -z $PID ]] && continue
        [[ $PID == "$grace" ]] && break
        unset "RANK_OF[$PID]"
    done
    forget_ended
    if ((${#RANK_OF[@]})); then
        kill -KILL "${!RANK_OF[@]}" 2>/dev/null
        wait "${!RANK_OF[@]}" 2>/dev/null
        RANK_OF=()
    fi
    kill "$grace" 2>/dev/null
}
trap 'stop_all; rm -rf "$STORE"' EXIT
trap 'echo "gloo_run.sh: interrupted, killing the ranks" >&2; exit 130' INT TERM HUP

for ((r = 0; r < N; r++)); do
    if ((r == 0)); then
        GLOO_RANK=$r GLOO_SIZE=$N GLOO_STORE_DIR=$STORE "$@" &
    else
        GLOO_RANK=$r GLOO_SIZE=$N GLOO_STORE_DIR=$STORE "$@" >/dev/null &
    fi
    RANK_OF[$!]=$r
    proc_state $!
    BORN[$!]=${PSTATE#* }
done

# The timeout is a child like the ranks: next_ended finds whichever ends first.
sleep "$TIMEOUT" &
WATCHDOG=$!

while ((${#RANK_OF[@]})); do
    next_ended "$WATCHDOG"
    [[ -z $PID ]] && continue
    if [[ $PID == "$WATCHDOG" ]]; then
        WATCHDOG=
        ranks=$(for p in "${!RANK_OF[@]}"; do echo "${RANK_OF[$p]}"; done | sort -n | paste -sd ' ')
        echo "gloo_run.sh: timeout after $TIMEOUT s, ranks still running: $ranks; killing them" >&2
        exit 124
    fi
    r=${RANK_OF[$PID]}
    unset "RANK_OF[$PID]"
    if ((RC != 0)); then
        ((RC > 128)) && why="was killed by signal $((RC - 128))" || why="exited with status $RC"
        echo "gloo_run.sh: rank $r (pid $PID) $why; killing the other ranks" >&2
        ((RC > 128)) && exit 1
        exit "$RC"
    fi
done
exit 0
