//go:build !cuda

package train

func init() {
	buildHints["cuda"] = "build golf with the cuda tag: go build -tags cuda ./cmd/golf (no cgo or CUDA toolkit needed)"
}
