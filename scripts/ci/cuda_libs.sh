#!/usr/bin/env bash
# cuda_libs.sh installs the CUDA 11.8 runtime libraries that golf's tagged
# CUDA tests use without a GPU: NVRTC (compiles the kernels to sm_80..sm_90
# cubins and reports ptxas's resource use) and cuBLASLt (descriptors,
# layouts and preferences are created and read back). Both are in Debian's
# non-free component, which this script enables by copying the machine's
# own apt source with the components replaced by "contrib non-free" (no
# mirror is named here: the copy points wherever the machine's apt already
# points). Idempotent; run as root.
#
#	scripts/ci/cuda_libs.sh            install (apt-get update only if needed)
#	GOLF_REQUIRE_CUDA_LIBS=1 go test -tags cuda ./cuda/...
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

# The packages: libnvrtc11.2 holds libnvrtc.so.11.2, libnvrtc-builtins11.8
# (a dependency, named too) libnvrtc-builtins.so.11.8, libcublaslt11
# libcublasLt.so.11.
pkgs=(libnvrtc11.2 libnvrtc-builtins11.8 libcublaslt11)

have_all() {
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || return 1
	done
}
if have_all; then
	echo "cuda_libs: ${pkgs[*]} already installed"
	exit 0
fi

src_dir=/etc/apt/sources.list.d
out="$src_dir/golf-cuda-nonfree"
if ! apt-cache policy "${pkgs[0]}" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
	if [ -f "$src_dir/debian.sources" ]; then
		# deb822: keep every stanza (URIs, Suites, Signed-By), replace its
		# components.
		sed -E 's/^Components:.*/Components: contrib non-free/' "$src_dir/debian.sources" >"$out.sources"
	elif [ -f /etc/apt/sources.list ] && grep -qE '^deb ' /etc/apt/sources.list; then
		# One-line format: "deb [opts] URI suite components..." becomes
		# "deb [opts] URI suite contrib non-free".
		grep -E '^deb ' /etc/apt/sources.list |
			sed -E 's/^(deb( \[[^]]*\])? [^ ]+ [^ ]+) .*/\1 contrib non-free/' >"$out.list"
	else
		echo "cuda_libs: no Debian apt source found ($src_dir/debian.sources or /etc/apt/sources.list) to derive the non-free component from" >&2
		exit 1
	fi
	apt-get update -q
fi
start=$(date +%s)
apt-get install -y -q --no-install-recommends "${pkgs[@]}"
echo "cuda_libs: installed ${pkgs[*]} in $(( $(date +%s) - start ))s"
dpkg -L "${pkgs[@]}" | grep -E '\.so' || true
