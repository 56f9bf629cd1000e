#!/usr/bin/env bash
# trixie_libs.sh fetches what CI checks golf against from Debian trixie,
# and unpacks it into a cache directory without installing anything:
#   - NCCL 2.22's header and library (libnccl-dev, libnccl2; contrib):
#     golf's NCCL binding is checked against that nccl.h (constants,
#     enums, ncclConfig_t's layout) and that libnccl.so.2 (its exported
#     symbols; and, since that build needs glibc 2.38, the loader's error
#     on an older system);
#   - NVRTC 12.4 (libnvrtc12, libnvrtc-builtins12.4; non-free), which runs
#     here: every kernel is compiled with it too (golf kernels).
#
# The trixie source is derived from the machine's own apt source (no
# mirror is named here: the copy points wherever the machine's apt already
# points), with the suite replaced by trixie and the components by
# "contrib non-free". apt's lists, cache and source file are kept in the
# cache directory, apart from the system's, so nothing of the system's apt
# state changes and no root is needed. Idempotent.
#
#	scripts/ci/trixie_libs.sh          fetch and unpack (nothing when done)
#	GOLF_NCCL_DIR=/tmp/golf-nccl GOLF_REQUIRE_CUDA_LIBS=1 go test -tags cuda ./cuda/ -run NCCL
#	GOLF_CUDA_LIB_PATH=/tmp/golf-nccl/root/usr/lib/x86_64-linux-gnu golf kernels --backend cuda
set -euo pipefail

dir=${GOLF_NCCL_DIR:-/tmp/golf-nccl}
root="$dir/root"
suite=trixie
pkgs=(libnccl-dev libnccl2 libnvrtc12 libnvrtc-builtins12.4)
multi=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo "$(uname -m)-linux-gnu")
header="$root/usr/include/nccl.h"
lib="$root/usr/lib/$multi/libnccl.so.2"
nvrtc="$root/usr/lib/$multi/libnvrtc.so.12"

report() {
	echo "trixie_libs: GOLF_NCCL_DIR=$dir"
	echo "trixie_libs: header  $header ($(sed -nE 's/^#define NCCL_VERSION_CODE +([0-9]+).*/NCCL_VERSION_CODE \1/p' "$header"))"
	echo "trixie_libs: library $lib -> $(readlink -f "$lib")"
	echo "trixie_libs: NVRTC   $nvrtc -> $(readlink -f "$nvrtc")"
}

if [ -f "$header" ] && [ -e "$lib" ] && [ -e "$nvrtc" ]; then
	report
	exit 0
fi

apt_dir="$dir/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/empty.d" "$dir/debs"
src="$apt_dir/trixie.sources"
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
	# deb822: every stanza whose Suites name the release itself (not its
	# -updates or -security suites), with that suite replaced by trixie and
	# the components by contrib non-free; URIs and Signed-By kept.
	awk -v codename="$codename" -v suite="$suite" '
		function flush() {
			if (stanza != "" && keep) printf "%s\n", stanza
			stanza = ""; keep = 0
		}
		/^[[:space:]]*$/ { flush(); next }
		/^Suites:/ {
			n = split(substr($0, 8), s, /[[:space:]]+/)
			for (i = 1; i <= n; i++) if (s[i] != "" && (s[i] == codename || (codename == "" && s[i] !~ /-/))) keep = 1
			stanza = stanza "Suites: " suite "\n"; next
		}
		/^Components:/ { stanza = stanza "Components: contrib non-free\n"; next }
		{ stanza = stanza $0 "\n" }
		END { flush() }
	' /etc/apt/sources.list.d/debian.sources >"$src"
elif [ -f /etc/apt/sources.list ] && grep -qE '^deb ' /etc/apt/sources.list; then
	# One-line format: "deb [opts] URI <release> components..." becomes
	# "deb [opts] URI trixie contrib non-free" (the -updates and -security
	# lines dropped).
	src="$apt_dir/trixie.list"
	: >"$src"
	while read -r line; do
		release=$(sed -E 's/^deb( \[[^]]*\])? [^ ]+ ([^ ]+).*/\2/' <<<"$line")
		if [ "$release" = "$codename" ] || { [ -z "$codename" ] && [[ $release != *-* ]]; }; then
			sed -E "s/^(deb( \[[^]]*\])? [^ ]+) [^ ]+ .*/\1 $suite contrib non-free/" <<<"$line" >>"$src"
		fi
	done < <(grep -E '^deb ' /etc/apt/sources.list)
else
	echo "trixie_libs: no Debian apt source found (/etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list) to derive trixie's from" >&2
	exit 1
fi
if ! [ -s "$src" ]; then
	echo "trixie_libs: the machine's apt source names no ${codename:-release} suite to derive trixie's from" >&2
	exit 1
fi

apt_opts=(
	-o "Dir::State::Lists=$apt_dir/lists"
	-o "Dir::Cache=$apt_dir/cache"
	-o "Dir::Etc::SourceList=$src"
	-o "Dir::Etc::SourceParts=$apt_dir/empty.d"
	-o "Dir::Etc::Preferences=$apt_dir/empty.d/preferences"
	-o "Dir::Etc::PreferencesParts=$apt_dir/empty.d"
	-o "APT::Sandbox::User=$(id -un)"
)
start=$(date +%s)
apt-get "${apt_opts[@]}" update -q
(cd "$dir/debs" && apt-get "${apt_opts[@]}" download "${pkgs[@]}")
rm -rf "$root.tmp"
for deb in "$dir"/debs/*.deb; do
	dpkg -x "$deb" "$root.tmp"
done
# The static archive (240 MB) and the packages are not needed once
# unpacked.
rm -f "$root.tmp/usr/lib/$multi/libnccl_static.a"
rm -rf "$root" "$dir/debs"
mv "$root.tmp" "$root"
echo "trixie_libs: fetched and unpacked ${pkgs[*]} in $(($(date +%s) - start))s"
report
