//go:build !amd64 && !arm64

package roofline

func fmaKind() string { return "go" }

func fmaLoop(n int) float64 { return fmaGo(n) }

func hasDotBF16() bool { return false }

func dotBF16Loop(n int) float64 { return 0 }
