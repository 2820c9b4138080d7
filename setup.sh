#!/usr/bin/env bash
# gpudml set-up: idempotent; safe to run before every command.
#  1. the software GPU adapters (Mesa lavapipe for Vulkan, llvmpipe for OpenGL)
#     on Debian/Ubuntu when their packages are missing;
#     and glslang-tools (glslangValidator: the second HLSL compiler tests/test_hlsl.py runs);
#  2. a virtual environment .venv with gpudml's dependencies, test dependencies, the
#     documentation site's (MkDocs: tests/test_docs.py builds it) and the hlsl extra's (slangpy:
#     Slang's compiler library, the default HLSL compiler; installed here, never at test time);
#  3. gpudml's wheel, built from this checkout and installed into .venv.
set -euo pipefail
cd "$(dirname "$0")"

SYSTEM_PACKAGES=(mesa-vulkan-drivers libvulkan1 libegl1 libegl-mesa0 libgl1-mesa-dri glslang-tools)
PYTHON=${PYTHON:-python3}

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else return 1
    fi
}

install_system_packages() {
    command -v dpkg-query >/dev/null 2>&1 || return 0   # not Debian: the platform's own GPU driver is used
    local missing=()
    for p in "${SYSTEM_PACKAGES[@]}" "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "setup: installing ${missing[*]}"
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
       ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
        echo "setup: could not install ${missing[*]} (run as root or with sudo)" >&2
        return 1
    fi
}

venv_extra=()
"$PYTHON" -c "import ensurepip, venv" 2>/dev/null || venv_extra+=(python3-venv)
install_system_packages "${venv_extra[@]}"

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.gpudml-deps
want=$(cat pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: installing gpudml's dependencies into .venv"
    .venv/bin/python -m pip install -q --upgrade pip setuptools wheel
    .venv/bin/python -m pip install -q ".[test,docs,hlsl]"
    echo "$want" > "$stamp"
fi
# 3. gpudml itself, as users get it: its wheel built into dist/ (templates from shaders/
#    inside it; tests/test_packaging.py checks its file list) and installed into .venv.
rm -rf build dist
.venv/bin/python -m pip wheel -q --no-deps --no-build-isolation --wheel-dir dist .
.venv/bin/python -m pip install -q --no-deps --force-reinstall dist/gpudml-*.whl
