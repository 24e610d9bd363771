#!/usr/bin/env bash
# ------------------------------------------------------------------------------------------------
# build-llama-bench.sh: build llama.cpp's `llama-bench` (and `llama-server`) natively with clang, from
# the llama.cpp source that node-llama-cpp@3.21.1 bundles (tests/oracle/node_modules/node-llama-cpp/
# llama/gitRelease.bundle), into build-llama/ (git-ignored). Works offline; nothing is downloaded
# except, when run as root and clang-16 is missing, Debian's clang-16 and libomp-16-dev through apt.
#
#   scripts/build-llama-bench.sh [--no-server] [--force] [--jobs N]
#
#   build-llama/src               the source, cloned from the bundle, with node-llama-cpp's patches
#   build-llama/build             the CMake build tree (Release, GGML_NATIVE=ON, CPU only, no curl,
#                                 no OpenSSL, no web UI, static libraries)
#   build-llama/bin/llama-bench   the binaries bench/compare uses
#   build-llama/bin/llama-server
#   build-llama/BUILD-INFO        compiler, flags, commit, build time
#
# Idempotent: does nothing when the binaries exist (--force rebuilds). clang, not gcc: GCC 12
# miscompiles ggml's AMX tile set-up (the tile-config stores are dropped), and clang is what the
# fastest llama.cpp builds measured for this project used. Compiler choice: $CC/$CXX if set, else
# clang-16 (installed through apt when possible), else the system clang (Debian 12: clang-14).
# Environment: FG_LLAMA_NO_APT=1 never calls apt-get.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/build-llama"
bundle="$root/tests/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle"
patch_dir="$root/tests/oracle/node_modules/node-llama-cpp/llama/patches"
server=1
force=0
jobs=2

say() { printf 'build-llama-bench: %s\n' "$*"; }
die() { printf 'build-llama-bench: ERROR: %s\n' "$*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --no-server) server=0 ;;
    --force) force=1 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    -h|--help) sed -n '3,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done

targets=(llama-bench)
[ "$server" = 1 ] && targets+=(llama-server)

# ---- already built? -----------------------------------------------------------------------------
if [ "$force" = 0 ]; then
  have_all=1
  for t in "${targets[@]}"; do [ -x "$out/bin/$t" ] || have_all=0; done
  if [ "$have_all" = 1 ]; then
    say "up to date: ${targets[*]} in $out/bin (--force rebuilds)"
    exit 0
  fi
fi

# ---- compiler -----------------------------------------------------------------------------------
if [ -z "${CC:-}" ] && ! command -v clang-16 >/dev/null 2>&1 && [ "${FG_LLAMA_NO_APT:-0}" != 1 ] &&
   [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  if apt-cache policy clang-16 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    say "installing clang-16 and libomp-16-dev through apt"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends clang-16 libomp-16-dev ||
      say "apt-get failed; falling back to the system clang"
  fi
fi
if [ -n "${CC:-}" ]; then
  cc=$CC; cxx=${CXX:-${CC/clang/clang++}}
elif command -v clang-16 >/dev/null 2>&1; then
  cc=clang-16; cxx=clang++-16
elif command -v clang >/dev/null 2>&1; then
  cc=clang; cxx=clang++
else
  die "no clang found (apt-get install clang-16, or set CC/CXX)"
fi
command -v "$cxx" >/dev/null 2>&1 || die "C++ compiler $cxx not found"
command -v cmake >/dev/null 2>&1 || die "cmake not found"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
say "compiler: $("$cc" --version | head -1)"

# ---- source -------------------------------------------------------------------------------------
[ -f "$bundle" ] || die "$bundle is missing; run scripts/setup.sh (npm ci in tests/oracle) first"
mkdir -p "$out"
if [ ! -f "$out/src/CMakeLists.txt" ]; then
  say "cloning the bundled llama.cpp source into $out/src"
  rm -rf "$out/src"
  git clone -q "$bundle" "$out/src" 2>/dev/null
  # the patches node-llama-cpp applies to the same source before building it
  for p in "$patch_dir"/*.diff; do
    [ -f "$p" ] || continue
    if git -C "$out/src" apply --check "$p" 2>/dev/null; then
      git -C "$out/src" apply "$p" && say "applied $(basename "$p")"
    else
      say "patch $(basename "$p") does not apply; building without it"
    fi
  done
fi
commit=$(git -C "$out/src" rev-parse --short HEAD)
release=$(node -p 'require(process.argv[1]).tag' "$root/tests/oracle/node_modules/node-llama-cpp/llama/llama.cpp.info.json" 2>/dev/null || echo unknown)

# ---- configure and build ------------------------------------------------------------------------
t0=$(date +%s)
cmake -S "$out/src" -B "$out/build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=ON \
  -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_OPENCL=OFF -DGGML_HIP=OFF -DGGML_SYCL=OFF \
  -DGGML_RPC=OFF -DGGML_OPENMP_FETCH=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_LLGUIDANCE=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER="$([ "$server" = 1 ] && echo ON || echo OFF)" \
  >"$out/cmake-configure.log" 2>&1 || { tail -30 "$out/cmake-configure.log" >&2; die "cmake configure failed (log: $out/cmake-configure.log)"; }
openmp=$(grep -q 'Found OpenMP: TRUE' "$out/cmake-configure.log" && echo yes || echo no)
say "configured (OpenMP: $openmp); building ${targets[*]} with $jobs jobs"
cmake --build "$out/build" --target "${targets[@]}" -j "$jobs" >"$out/cmake-build.log" 2>&1 ||
  { tail -30 "$out/cmake-build.log" >&2; die "build failed (log: $out/cmake-build.log)"; }
t1=$(date +%s)

mkdir -p "$out/bin"
for t in "${targets[@]}"; do
  f=$(find "$out/build" -type f -name "$t" -perm -u+x | head -1)
  [ -n "$f" ] || die "$t was not produced"
  cp -f "$f" "$out/bin/$t"
done
flags=$(sed -n 's/.*Adding CPU backend variant ggml-cpu: *//p' "$out/cmake-configure.log" | head -1 | sed 's/ *$//')
{
  echo "llama.cpp: node-llama-cpp@3.21.1 bundle, release $release, commit $commit"
  echo "compiler: $("$cc" --version | head -1)"
  echo "options: Release, GGML_NATIVE=ON ${flags:+($flags)}, CPU only, OpenMP $openmp, static, no curl/OpenSSL"
  echo "targets: ${targets[*]}"
  echo "build seconds: $((t1 - t0)) with $jobs jobs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
} >"$out/BUILD-INFO"
sed 's/^/build-llama-bench: /' "$out/BUILD-INFO"
