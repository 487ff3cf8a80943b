#!/usr/bin/env bash
# Installs what building and running xwarp on llvmpipe needs, on Debian 12 or newer:
# the Vulkan loader, Mesa's CPU driver llvmpipe, the validation layer and spirv-tools (spirv-val
# checks the SPIR-V the Vulkan backend edits, and CI validates spirv/ with it). The library
# builds without a shader compiler (it embeds the prebuilt SPIR-V of spirv/). `cargo xtask
# shaders`, which regenerates spirv/ after a shader changes, builds shaderc from source and
# needs cmake, ninja-build, g++, python3 and git besides: `XWARP_SETUP_XTASK=1` installs them
# too. Needs root (or sudo).
set -euo pipefail

packages=(libvulkan1 mesa-vulkan-drivers vulkan-validationlayers spirv-tools pkg-config
    # the linker Rust drives:
    gcc libc6-dev)
if [ "${XWARP_SETUP_XTASK:-0}" = 1 ]; then
    # shaderc's build from source, for `cargo xtask shaders`:
    packages+=(cmake ninja-build g++ python3 git)
fi
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "setup: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ! command -v cargo >/dev/null; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null; then
    echo "setup: no Rust toolchain found: install Rust 1.88 or newer (https://rustup.rs)" >&2
    exit 1
fi
