#!/usr/bin/env bash
# Install test: installs the build tree into a temporary prefix, checks the layout and that the
# shared libraries export only public names, then builds the basics sample as a user would (once
# with pkg-config, once with -lacl_rt, once as a CMake project with find_package) and runs each
# with the installed hcclrun, plus an installed perf tool, plus our hccl_test reproduction
# (tests/progs/hccl_test_like.c) linked as CANN's hccl_test links (-lhccl -lacl_rt -lmsprofiler). Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name libhccl.so -print -quit)")
[ -n "$libdir" ] || fail "no libhccl.so installed"
for f in "$libdir/libascendcl.so" "$libdir/libacl_rt.so" "$libdir/libmsprofiler.so" "$prefix/share/pkgconfig/hccl.pc" \
         "$prefix/share/pkgconfig/ascendcl.pc" "$prefix/share/pkgconfig/msprofiler.pc" "$prefix/include/acl/acl_prof.h" \
         "$prefix/share/cmake/OpenHCCL/OpenHCCLConfig.cmake" "$prefix/lib64/libhccl.so" \
         "$prefix/include/acl/acl.h" "$prefix/include/hccl/hccl.h" "$prefix/include/hccl/hccl_ext.h" \
         "$prefix/bin/hcclrun" "$prefix/bin/all_reduce_perf" "$prefix/bin/alltoallv_perf" \
         "$prefix/bin/alltoallvc_perf"; do
  [ -e "$f" ] || fail "missing after install: ${f#"$prefix"/}"
done

# Exported names: CANN's (acl*, Hccl*) and our documented extensions (aclExt*, HcclExt*) only.
check_exports() {
  local lib=$1 allowed=$2 bad
  bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -Ev "$allowed" || true)
  [ -z "$bad" ] || fail "$(basename "$lib") exports internal symbols: $(echo "$bad" | head -5 | tr '\n' ' ')"
  echo "$(basename "$lib"): $(nm -D --defined-only "$lib" | wc -l) exported symbols, all public"
}
check_exports "$libdir/libhccl.so" '^Hccl'
check_exports "$libdir/libascendcl.so" '^acl'
check_exports "$libdir/libmsprofiler.so" '^aclprof'

export HCCL_EMU_NAMESPACE="install-test-$$"
runn() { local n=$1; shift; "$prefix/bin/hcclrun" -n "$n" --timeout 120 "$@" 2>&1; }
run2() { runn 2 "$@"; }
expect_ok() {
  local what=$1 out; shift
  out=$(run2 "$@") || fail "$what: exit status $? ($out)"
  [ "$(grep -c '\] OK$' <<<"$out")" -eq 2 ] || fail "$what: not every rank printed OK: $out"
  echo "$what: OK on 2 ranks"
}

export PKG_CONFIG_PATH=$prefix/share/pkgconfig
# shellcheck disable=SC2046
cc -o "$tmp/basics_pc" "$src/samples/basics/main.c" $(pkg-config --cflags --libs hccl) -Wl,-rpath,"$libdir"
expect_ok "pkg-config build" "$tmp/basics_pc"
cc -o "$tmp/basics_aclrt" "$src/samples/basics/main.c" -I"$prefix/include" -L"$libdir" -lhccl -lacl_rt \
  -Wl,-rpath,"$libdir"
expect_ok "-lhccl -lacl_rt build" "$tmp/basics_aclrt"

cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DOH_PROGRAM_SOURCE="$src/samples/basics/main.c" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
expect_ok "find_package(OpenHCCL) build" "$tmp/consumer/consumer"

out=$(run2 "$prefix/bin/all_reduce_perf" -b 8 -e 1K -f 4 -n 2 -w 1) || fail "installed all_reduce_perf: $out"
echo "installed all_reduce_perf: ran on 2 ranks"

# hccl_test's build: -lhccl -lacl_rt -lmsprofiler against the prefix; every op checked on 2 and 4 ranks,
# with zero copy (-z 1) and symmetric memory (-m 1).
cc -o "$tmp/hccl_test_like" "$src/tests/progs/hccl_test_like.c" -I"$prefix/include" -L"$libdir" \
  -lhccl -lacl_rt -lmsprofiler -Wl,-rpath,"$libdir"
expect_checked() {
  local what=$1 n=$2 out; shift 2
  out=$(runn "$n" "$tmp/hccl_test_like" "$@") || fail "$what: exit status $? ($out)"
  ! grep -qi 'error\|check_result fail' <<<"$out" || fail "$what: error lines: $out"
  grep -q 'check_result success' <<<"$out" || fail "$what: no checked result: $out"
  echo "$what: $(grep -c 'check_result success' <<<"$out") results checked on $n ranks"
}
expect_checked "hccl_test_like (-lhccl -lacl_rt -lmsprofiler)" 2 -t all -b 8 -e 1K -f 8 -d fp32,int8 -o sum,max -n 1 -w 1 -c 1
expect_checked "hccl_test_like -z 1" 2 -t all -b 1K -e 64K -f 64 -d fp32 -o sum -n 1 -w 1 -c 1 -z 1
expect_checked "hccl_test_like" 4 -t all -b 8 -e 4K -f 64 -d fp32 -o sum -n 1 -w 1 -c 1
expect_checked "hccl_test_like -m 1" 4 -t all -b 1K -e 64K -f 64 -d fp32 -o sum -n 1 -w 1 -c 1 -m 1
echo "install test: PASS"
