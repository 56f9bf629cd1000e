//go:build amd64 && !purego

package vmath

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestConstOffsets checks that every constant vmath_amd64.s names sits at
// 32 bytes times its row of vconst, and that every row is named.
func TestConstOffsets(t *testing.T) {
	rows := map[string]int{
		"LOG2E": cLog2E, "MAGIC": cMagic, "C1": cC1, "C2": cC2,
		"P0": cP0, "P1": cP1, "P2": cP2, "P3": cP3, "P4": cP4, "P5": cP5,
		"ONE": cOne, "BIAS": cBias, "EXPLO": cExpLo, "EXPHI": cExpHi,
		"ABSMASK": cAbs, "SIGNMASK": cSign, "TWO": cTwo, "TANHLO": cTanhLo, "TANHHI": cTanhHi,
		"Q0": cQ0, "Q1": cQ1, "Q2": cQ2, "Q3": cQ3, "Q4": cQ4,
		"LSB": cLSB, "HALFBF16": cHalfBF16, "INFBITS": cInfBits, "QUIETBF": cQuietBF,
	}
	src, err := os.ReadFile("vmath_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	defs := regexp.MustCompile(`(?m)^#define (\w+) ·vconst\+(\d+)\(SB\)$`).FindAllSubmatch(src, -1)
	seen := map[int]bool{}
	for _, d := range defs {
		name := string(d[1])
		off, _ := strconv.Atoi(string(d[2]))
		row, ok := rows[name]
		if !ok {
			t.Errorf("vmath_amd64.s defines %s, unknown here", name)
			continue
		}
		if off != 32*row {
			t.Errorf("%s at offset %d, want %d (row %d)", name, off, 32*row, row)
		}
		seen[row] = true
	}
	if len(seen) != nConst || len(defs) != nConst {
		t.Errorf("vmath_amd64.s names %d constants (%d rows), vconst has %d", len(defs), len(seen), nConst)
	}
}
