package train

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// Opener starts a GPU backend or says why it cannot (no device, not built
// for this platform).
type Opener func() (backend.Backend, error)

// gpuOpeners are the GPU backends compiled into this binary, registered by
// their packages' build-tagged files; the CPU is always there.
var gpuOpeners = map[string]Opener{}

// RegisterBackend makes a GPU backend available to --backend.
func RegisterBackend(name string, open Opener) { gpuOpeners[name] = open }

// buildHints says, per GPU backend a build may leave out, how to get it
// (set by build-tagged files such as backends_nocuda.go).
var buildHints = map[string]string{}

// OpenBackend returns the backend --backend names, and for "auto" the first
// GPU backend that opens (metal, then cuda), else the CPU, with the reason
// for the choice.
func OpenBackend(name string) (b backend.Backend, why string, err error) {
	switch name {
	case "cpu":
		return cpu.New(), "requested with --backend cpu", nil
	case "auto":
		var reasons []string
		for _, n := range []string{"metal", "cuda"} {
			open, ok := gpuOpeners[n]
			if !ok {
				reasons = append(reasons, n+": not built into this binary")
				continue
			}
			b, err := open()
			if err == nil {
				return b, "auto: " + n + " device available", nil
			}
			reasons = append(reasons, fmt.Sprintf("%s: %s", n, oneLine(err)))
		}
		return cpu.New(), "auto: no GPU backend usable (" + strings.Join(reasons, "; ") + ")", nil
	}
	open, ok := gpuOpeners[name]
	if !ok {
		var built []string
		for n := range gpuOpeners {
			built = append(built, n)
		}
		sort.Strings(built)
		err := fmt.Errorf("--backend %s: not built into this binary (available: cpu%s)", name, prefixEach(", ", built))
		if hint, ok := buildHints[name]; ok {
			err = fmt.Errorf("%w; %s", err, hint)
		}
		return nil, "", err
	}
	b, err = open()
	if err != nil {
		return nil, "", fmt.Errorf("--backend %s: %w", name, err)
	}
	return b, "requested with --backend " + name, nil
}

// summarised is an opener's error with a one-line form for --backend
// auto's log (the full error can list every library path tried).
type summarised struct {
	err     error
	summary string
}

func (s summarised) Error() string { return s.err.Error() }
func (s summarised) Unwrap() error { return s.err }

// oneLine is err's summary when it has one, else its first line.
func oneLine(err error) string {
	var s summarised
	if errors.As(err, &s) && s.summary != "" {
		return s.summary
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return msg[:i]
	}
	return msg
}

func prefixEach(p string, xs []string) string {
	s := ""
	for _, x := range xs {
		s += p + x
	}
	return s
}
