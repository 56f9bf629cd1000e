package metal

import (
	"fmt"
	"regexp"
	"strings"
)

// What the darwin runtime compiles and whether it may run at all, kept free
// of cgo so that Linux tests cover it.

// instantiation matches one instantiate_kernel("<op>_<flavour>_" ...) call
// of the shader sources; group 1 is the flavour.
var instantiation = regexp.MustCompile(`instantiate_kernel\("[a-z0-9_]*?_(simd|portable)_" #tname, [^()]*\)`)

// FlavourSource returns the joined shader source (shaders.Source) with the
// kernel instantiations of the other flavour removed, so that a device
// compiles only the kernels it runs: the portable flavour on a GPU without
// simdgroup matrices never builds a simd kernel. Templates that are no
// longer instantiated are parsed but generate no code. It is an error when
// the source does not instantiate every registry kernel in both flavours
// (a changed instantiation format would otherwise remove nothing, or
// everything, silently).
func FlavourSource(src string, f Flavour) (string, error) {
	other := Portable
	if f == Portable {
		other = Simd
	}
	counts := map[string]int{}
	for _, m := range instantiation.FindAllStringSubmatch(src, -1) {
		counts[m[1]]++
	}
	if counts["simd"] != len(Kernels) || counts["portable"] != len(Kernels) {
		return "", fmt.Errorf("metal: the shader source instantiates %d simd and %d portable kernels in the form instantiate_kernel(\"<op>_<flavour>_\" #tname, ...); the registry has %d",
			counts["simd"], counts["portable"], len(Kernels))
	}
	// Each call sits on its own line of an instantiation macro, which may
	// continue with a backslash: replacing the call with nothing keeps the
	// macro well formed.
	return instantiation.ReplaceAllStringFunc(src, func(call string) string {
		if strings.Contains(call, "_"+other.String()+"_\"") {
			return ""
		}
		return call
	}), nil
}

// deviceFacts are what the darwin runtime learns of the system and device
// before compiling anything.
type deviceFacts struct {
	name                   string
	macOSMajor, macOSMinor int
	// appleFamily is the highest MTLGPUFamilyApple<n> the device supports,
	// 0 for none (the Intel or AMD GPU of an Intel Mac).
	appleFamily int
	metal3      bool // MTLGPUFamilyMetal3
	unified     bool // hasUnifiedMemory
}

// minMacOS is the oldest macOS the Metal backend runs on: its shaders are
// MSL 3.1 (bfloat), which macOS 13 cannot compile, and every kernel file
// instantiates bfloat kernels, so below it no kernel at all would build.
const minMacOS = 14

// checkDevice returns why golf's Metal backend cannot run on the system,
// or nil. Each error names what is missing and suggests --backend cpu.
func checkDevice(f deviceFacts) error {
	switch {
	case f.macOSMajor < minMacOS:
		return fmt.Errorf("metal: golf's Metal backend needs macOS %d (Sonoma) or later, for the MSL 3.1 its shaders are written in; this Mac runs macOS %d.%d: update macOS or use --backend cpu",
			minMacOS, f.macOSMajor, f.macOSMinor)
	case f.appleFamily == 0:
		return fmt.Errorf("metal: %s is not an Apple GPU (an Intel Mac): golf's Metal backend needs Apple silicon; use --backend cpu", f.name)
	case !f.unified:
		return fmt.Errorf("metal: %s has no unified memory: golf's Metal backend keeps every tensor in CPU-shared buffers, which would cross the bus on this GPU; use --backend cpu", f.name)
	}
	return nil
}

// flavourAndBFloat derives the kernels' flavour and bfloat support: simd on
// Apple7 and later (simdgroup reductions and matrices: M1 and later),
// bfloat on Apple6 or Metal3 (MSL 3.1 is guaranteed by checkDevice).
func (f deviceFacts) flavourAndBFloat() (Flavour, bool) {
	fl := Portable
	if f.appleFamily >= 7 {
		fl = Simd
	}
	return fl, f.appleFamily >= 6 || f.metal3
}
