#!/usr/bin/env bash
# The macOS workflow's job (.github/workflows/macos.yml), one script for
# every macOS runner label: compiles the shader library and the device
# probes with Apple's own compiler (MSL 3.1), builds golf with cgo and
# darwinkit, runs the test suite, then the Metal tests on the runner's GPU
# with Metal's API and shader validation on, and writes what golf reports
# of the device and its speed into $1 (uploaded as an artifact).
#
# Hosted runners expose an "Apple Paravirtual device" that reports Apple5
# through supportsFamily; golf probes it at start-up (metal/probe.go) and
# runs the kernels it computes correctly, so the device line of
# `golf info` says which flavour and dtypes ran and why. Its timings are a
# virtual machine's, not a laptop's.
set -euo pipefail
out=${1:?usage: scripts/ci/macos.sh OUT_DIR}
mkdir -p "$out"

echo "== Metal device"
system_profiler SPDisplaysDataType || true

echo "== shaders and probes through Apple's compiler (MSL 3.1)"
src="$out/shaders"
go run ./scripts/metalsrc -o "$src"
xcrun -sdk macosx metal --version
for f in "$src"/*.metal; do
	echo "-- $f"
	xcrun -sdk macosx metal -std=metal3.1 -c "$f" -o "${f%.metal}.air"
done

echo "== go build, vet, test"
go build ./...
go vet ./...
go test ./...

echo "== Metal tests on the GPU (validation on)"
MTL_SHADER_VALIDATION=1 MTL_DEBUG_LAYER=1 go test ./metal/... -run GPU -v -count=1

echo "== golf info and golf bench on the runner's device"
go build -o "$out/golf" ./cmd/golf
{
	echo "# golf info --backend metal on a hosted runner ($(sw_vers -productVersion), $(uname -m)):"
	echo "# an Apple Paravirtual device in a virtual machine, not a laptop's GPU"
	"$out/golf" info --backend metal
} | tee "$out/info.txt"
{
	echo "# golf bench --backend metal --min-time 2s on a hosted runner ($(sw_vers -productVersion)):"
	echo "# a paravirtual device's numbers, shared with other virtual machines: not a laptop's"
	"$out/golf" bench --backend metal --min-time 2s
} | tee "$out/bench.txt"
rm -f "$out/golf"
