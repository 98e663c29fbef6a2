# shellcheck shell=bash disable=SC2034 # sourced by compare.sh, which reads PEER_VERSION and PEER_CMD
# compare_peers.sh: the libraries compare.sh measures OpenHCCL against, and how each is built and
# launched. Sourced by compare.sh (needs ROOT, BUILD, TIMEOUT, YIELD, MPICH_MAX_N set).
#
# Every peer is optional: one that is not installed is skipped with the command that installs it.
#   ompi   Open MPI (Debian: openmpi-bin libopenmpi-dev). mpi_coll_bench.c built with mpicc.openmpi,
#          run on shared memory only (pml ob1, btl self,vader), unbound, oversubscribed, with
#          mpi_yield_when_idle 1 unless -y 0 (see compare.sh).
#   mpich  MPICH (Debian: mpich libmpich-dev; ch4:ucx). The same mpi_coll_bench.c built with
#          mpicc.mpich. Its waits always poll (UCX has no yielding mode), so with more ranks than cores
#          a call takes milliseconds (8 B allreduce at N = 4 on 2 cores: 6.4 ms); it runs only up to
#          MPICH_MAX_N ranks (compare.sh -M, default: the number of CPUs).
#   gloo   Gloo (Debian: libgloo-dev, g++). gloo_coll_bench.cc, TCP on loopback, launched by
#          gloo_run.sh with a file store.
# Env: MPICC, MPIRUN_BIN (Open MPI's, default mpicc.openmpi, mpirun.openmpi), MPICH_CC, MPICH_RUN
# (default mpicc.mpich, mpirun.mpich), GLOO_CXX (default g++).

declare -A PEER_LABEL=([ompi]="Open MPI" [mpich]=MPICH [gloo]=Gloo)
declare -A PEER_INSTALL=([ompi]="openmpi-bin libopenmpi-dev" [mpich]="mpich libmpich-dev" [gloo]="libgloo-dev g++")
declare -A PEER_VERSION PEER_BIN
PEERS=()          # the peers found and built, in the order asked for
PEER_NOTES=()     # one line per peer skipped, or limited

# Rebuilds out from src when missing or older than src or the headers it shares (tools/common):
# build_if_stale out src "libs" compiler [flags...]
build_if_stale() {
    local out=$1 src=$2 libs=$3 dep stale=0
    shift 3
    for dep in "$src" "$ROOT"/tools/common/*.h; do [[ $dep -nt $out ]] && stale=1; done
    [[ -x $out ]] && ((!stale)) && return 0
    mkdir -p "$(dirname "$out")"
    # shellcheck disable=SC2086 # libs is a list of -l flags
    "$@" -o "$out" "$src" $libs
}

peer_setup_ompi() {
    local cc=${MPICC:-mpicc.openmpi}
    # shellcheck disable=SC2054 # "self,vader" is one mpirun argument
    OMPI_RUN=("${MPIRUN_BIN:-mpirun.openmpi}" --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader)
    command -v "$cc" >/dev/null && command -v "${OMPI_RUN[0]}" >/dev/null || return 1
    [[ $(id -u) -eq 0 ]] && OMPI_RUN+=(--allow-run-as-root)
    ((YIELD)) && OMPI_RUN+=(--mca mpi_yield_when_idle 1)
    PEER_BIN[ompi]=$BUILD/tools/bench/mpi_coll_bench.openmpi
    build_if_stale "${PEER_BIN[ompi]}" "$ROOT/tools/bench/mpi_coll_bench.c" "" "$cc" -O2 -std=gnu11 -Wall -Wextra -Werror ||
        return 1
    PEER_VERSION[ompi]="$("${OMPI_RUN[0]}" --version 2>/dev/null | head -1) (${OMPI_RUN[*]})"
}

peer_setup_mpich() {
    local cc=${MPICH_CC:-mpicc.mpich}
    MPICH_RUN=${MPICH_RUN:-mpirun.mpich}
    command -v "$cc" >/dev/null && command -v "$MPICH_RUN" >/dev/null || return 1
    PEER_BIN[mpich]=$BUILD/tools/bench/mpi_coll_bench.mpich
    build_if_stale "${PEER_BIN[mpich]}" "$ROOT/tools/bench/mpi_coll_bench.c" "" "$cc" -O2 -std=gnu11 -Wall -Wextra -Werror ||
        return 1
    PEER_VERSION[mpich]="MPICH $(mpichversion 2>/dev/null | awk '/^MPICH (Version|Device):/ { sub(/^[^:]*:[ \t]*/, ""); printf "%s ", $0 }')($MPICH_RUN)"
    PEER_NOTES+=("MPICH runs only at N <= $MPICH_MAX_N (its waits poll; oversubscribed it takes ms per call; -M to change)")
}

peer_setup_gloo() {
    local cxx=${GLOO_CXX:-g++}
    command -v "$cxx" >/dev/null && [[ -d /usr/include/gloo ]] || return 1
    PEER_BIN[gloo]=$BUILD/tools/bench/gloo_coll_bench
    build_if_stale "${PEER_BIN[gloo]}" "$ROOT/tools/bench/gloo_coll_bench.cc" "-lgloo -lpthread" \
        "$cxx" -O2 -std=c++17 -Wall -Wextra -Werror || return 1
    PEER_VERSION[gloo]="Gloo $(dpkg-query -W -f='${Version}' libgloo-dev 2>/dev/null) (TCP, loopback)"
}

# Sets up every peer of the list ("ompi mpich gloo"); prints why one is skipped.
peers_setup() {
    local p
    for p in $1; do
        [[ -n ${PEER_LABEL[$p]:-} ]] || { echo "compare.sh: unknown peer '$p' (ompi mpich gloo)" >&2; exit 2; }
        if "peer_setup_$p"; then
            PEERS+=("$p")
        else
            PEER_NOTES+=("${PEER_LABEL[$p]} skipped: not found or did not build (apt-get install -y ${PEER_INSTALL[$p]})")
        fi
    done
}

peer_runs_at() { # peer n
    [[ $1 != mpich ]] || (($2 <= MPICH_MAX_N))
}

# Gloo's benchmark has no V forms; the MPIs time them too (AlltoAllVC as MPI_Alltoallv: MPI has no
# such call).
peer_does() { # peer coll
    [[ $1 != gloo ]] || [[ $2 != *v && $2 != *vc ]]
}

# The command line that starts the peer's benchmark on n ranks: sets the array PEER_CMD.
peer_command() { # peer n
    case $1 in
    ompi) PEER_CMD=("${OMPI_RUN[@]}" -n "$2" "${PEER_BIN[ompi]}") ;;
    mpich) PEER_CMD=("$MPICH_RUN" -n "$2" "${PEER_BIN[mpich]}") ;;
    gloo) PEER_CMD=("$ROOT/tools/bench/gloo_run.sh" -n "$2" -t "$TIMEOUT" "${PEER_BIN[gloo]}") ;;
    esac
}
