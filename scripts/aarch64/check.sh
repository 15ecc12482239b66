#!/bin/bash
# Build the few-row kernel's NEON variant for aarch64 and run its tests, and the tiny-family
# lossless tests, on an aarch64 Python under qemu-user, on a Debian 12 x86-64 machine.
#
#   make check-aarch64              # or: bash scripts/aarch64/check.sh [pytest arguments]
#
# This checks the arithmetic (every variant's tests: the linear map, the same bits alone and
# in a tree, top-k) and losslessness on aarch64; under emulation nothing can be timed.
# Set-up, all under $ROOT (default ~/.cache/logitspec/aarch64; about 4.5 GB, 2-3 minutes
# the first time, skipped when done):
#   host: apt packages qemu-user, g++-aarch64-linux-gnu (the cross compiler torch's extension
#         builder runs), ninja-build; `dpkg --add-architecture arm64`, only so that apt can
#         download arm64 .debs. Nothing arm64 is installed into the host system.
#   sysroot/  Debian 12's arm64 python3.11 and its libraries, extracted with dpkg-deb -x
#   site/     PyPI's aarch64 wheels: torch (its aarch64 wheel is the CUDA build, whose
#             libraries need the NVIDIA runtime wheels to load; no GPU is used), transformers,
#             pytest, hypothesis and their dependencies, pinned
#   py        the emulated python3.11 (`$ROOT/py ARGS`)
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
ROOT=${LOGITSPEC_AARCH64_DIR:-$HOME/.cache/logitspec/aarch64}
SYSROOT=$ROOT/sysroot SITE=$ROOT/site
die() { echo "check-aarch64: $*" >&2; exit 1; }
step() { echo "== [$(date +%T)] $*"; }
done_for() { [ "$(cat "$ROOT/.$1" 2>/dev/null)" = "$2" ]; }  # whether a step ran with this key
pin() { grep -h -i -E "^$1==" requirements.txt requirements-dev.txt | head -1; }

[ "$(uname -m)" = x86_64 ] && grep -q 'VERSION_ID="12"' /etc/os-release 2>/dev/null ||
  die "made for a Debian 12 x86-64 machine (found $(uname -m))"
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
mkdir -p "$ROOT"

step "host packages"
HOST_PKGS="qemu-user g++-aarch64-linux-gnu libgomp1-arm64-cross ninja-build"
python3 -m pip --version >/dev/null 2>&1 || HOST_PKGS="$HOST_PKGS python3-pip"  # pip downloads the wheels
missing=$(for p in $HOST_PKGS; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || echo "$p"; done)
if [ -n "$missing" ]; then
  $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null ||
    die "apt-get install $missing failed"
fi

step "arm64 python3.11 -> $SYSROOT"
ARM_PKGS="libc6 libgcc-s1 gcc-12-base libstdc++6 libgomp1 zlib1g libexpat1 libffi8 libssl3 libbz2-1.0
  liblzma5 libzstd1 libsqlite3-0 libncursesw6 libtinfo6 libreadline8 libuuid1 libcrypt1 libdb5.3
  libnsl2 libtirpc3 libgssapi-krb5-2 libk5crypto3 libkeyutils1 libkrb5-3 libkrb5support0 libcom-err2
  python3.11-minimal libpython3.11-minimal libpython3.11-stdlib python3.11 libpython3.11-dev"
if ! done_for sysroot "$(echo $ARM_PKGS)"; then
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
  rm -rf "$ROOT/debs" "$SYSROOT"; mkdir -p "$ROOT/debs" "$SYSROOT"
  (cd "$ROOT/debs" && apt-get download -qq $(for p in $ARM_PKGS; do echo "$p:arm64"; done)) || die "apt-get download failed"
  for d in "$ROOT/debs"/*.deb; do dpkg-deb -x "$d" "$SYSROOT"; done
  rm -rf "$ROOT/debs"
  # Debian's pyconfig.h includes <aarch64-linux-gnu/python3.11/pyconfig.h>, which the cross
  # compiler does not search: put the real one where Python.h looks.
  cp "$SYSROOT/usr/include/aarch64-linux-gnu/python3.11/pyconfig.h" "$SYSROOT/usr/include/python3.11/pyconfig.h"
  mkdir -p "$SYSROOT/usr/lib/python3/dist-packages"
  echo "$SITE" > "$SYSROOT/usr/lib/python3/dist-packages/zz-site.pth"
  # sys.executable: a host script that starts the emulated python again, so subprocesses work
  printf '#!/bin/sh\nexec %s "$@"\n' "$ROOT/py" > "$SYSROOT/usr/bin/python3.11-aarch64"
  chmod +x "$SYSROOT/usr/bin/python3.11-aarch64"
  echo $ARM_PKGS > "$ROOT/.sysroot"
fi

step "the emulated CPU's /proc/cpuinfo, and the wrapper $ROOT/py"
# qemu-user 7.2 shows the guest the x86 host's /proc/cpuinfo, on which torch's cpuinfo library
# crashes. With -L, a guest path that exists under the sysroot is read from there: the wrapper
# writes an aarch64 one (and the MIDR_EL1 file oneDNN reads) for the emulated CPU.
aarch64-linux-gnu-gcc -O2 -static -o "$ROOT/fake_cpuinfo" scripts/aarch64/fake_cpuinfo.c
cat > "$ROOT/py" <<WRAPPER
#!/bin/bash
# The aarch64 python3.11 under qemu-user (written by scripts/aarch64/check.sh).
set -e
export QEMU_CPU=\${QEMU_CPU:-neoverse-n1} CXX=aarch64-linux-gnu-g++ CC=aarch64-linux-gnu-gcc
ncpu=\$(nproc)
if [ "\$(cat "$SYSROOT/proc/.made-for" 2>/dev/null)" != "\$QEMU_CPU \$ncpu" ]; then
  mkdir -p "$SYSROOT/proc"
  qemu-aarch64 "$ROOT/fake_cpuinfo" \$ncpu > "$SYSROOT/proc/cpuinfo"
  midr=\$(qemu-aarch64 "$ROOT/fake_cpuinfo" midr)
  for ((i = 0; i < ncpu; i++)); do
    d=$SYSROOT/sys/devices/system/cpu/cpu\$i/regs/identification; mkdir -p "\$d"; echo \$midr > "\$d/midr_el1"
  done
  echo "\$QEMU_CPU \$ncpu" > "$SYSROOT/proc/.made-for"
fi
exec qemu-aarch64 -L "$SYSROOT" -0 "$SYSROOT/usr/bin/python3.11-aarch64" "$SYSROOT/usr/bin/python3.11" "\$@"
WRAPPER
chmod +x "$ROOT/py"
rm -f "$SYSROOT/proc/.made-for"

step "aarch64 wheels -> $SITE"
NVIDIA="nvidia-cuda-runtime==13.0.96 nvidia-cublas==13.1.1.3 nvidia-cuda-cupti==13.0.85 nvidia-cuda-nvrtc==13.0.88
  nvidia-cudnn-cu13==9.20.0.48 nvidia-cufft==12.0.0.61 nvidia-cufile==1.15.1.6 nvidia-curand==10.4.0.35
  nvidia-cusolver==12.0.4.66 nvidia-cusparse==12.6.3.3 nvidia-cusparselt-cu13==0.8.1 nvidia-nccl-cu13==2.29.7
  nvidia-nvjitlink==13.5.37 nvidia-nvshmem-cu13==3.4.5 nvidia-nvtx==13.0.85"
WHEELS="$(pin torch) $(pin transformers) $(pin numpy) $(pin tqdm) $(pin networkx) $(pin pytest) $(pin hypothesis)
  $NVIDIA filelock==4.3.1 typing-extensions==4.16.0 setuptools==84.2.1 sympy==1.14.0 mpmath==1.3.0
  jinja2==3.1.6 markupsafe==3.0.4 fsspec==2026.9.0 pluggy==1.7.0 iniconfig==2.3.1 packaging==26.4
  pygments==2.21.0 sortedcontainers==2.4.0 tokenizers==0.23.3 safetensors==0.8.0 huggingface-hub==2.4.0
  regex==2026.11.19 pyyaml==6.0.4 hf-xet==1.8.0 httpx2==2.16.2 httpcore2==2.16.2 h11==0.16.0 anyio==4.16.0
  idna==3.20 certifi==2026.10.19.post1 truststore==0.10.5 typer==0.29.2 click==8.5.1 shellingham==1.5.4
  rich==15.0.0 markdown-it-py==4.3.0 mdurl==0.1.2 annotated-doc==0.0.7"
if ! done_for site "$(echo $WHEELS)"; then
  PLATFORMS="--platform manylinux2014_aarch64"
  for i in $(seq 17 36); do PLATFORMS="$PLATFORMS --platform manylinux_2_${i}_aarch64"; done  # glibc 2.36
  rm -rf "$ROOT/wheels" "$SITE"; mkdir -p "$ROOT/wheels"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 --implementation cp \
    --abi cp311 --abi abi3 --abi none $PLATFORMS -d "$ROOT/wheels" $WHEELS || die "pip download failed"
  for w in "$ROOT/wheels"/*.whl; do python3 -m zipfile -e "$w" "$SITE"; done
  rm -rf "$ROOT/wheels"
  # .pyc files are the same on every architecture: compiling natively saves minutes per import
  python3 -m compileall -q -j 2 "$SITE" "$SYSROOT/usr/lib/python3.11" >/dev/null 2>&1 || true
  echo $WHEELS > "$ROOT/.site"
fi
"$ROOT/py" -c "import platform, torch; assert platform.machine() == 'aarch64'; print('aarch64 python, torch', torch.__version__)"

step "tests under emulation"
export LOGITSPEC_KERNEL_DIR=$ROOT/kernels
"$ROOT/py" -c "from logitspec.runtime.fewrows import few_row_kernel, kernel_status; few_row_kernel(); print('few-row kernel:', kernel_status())"
TESTS=(tests/unit/test_fewrows.py tests/unit/test_linear.py tests/lossless/test_families.py)
[ $# = 0 ] || TESTS=("$@")
exec "$ROOT/py" -m pytest -q -p no:cacheprovider "${TESTS[@]}"
