//go:build amd64 && !purego

package vmath

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.NoError(t, err)
	defs := regexp.MustCompile(`(?m)^#define (\w+) ·vconst\+(\d+)\(SB\)$`).FindAllSubmatch(src, -1)
	seen := map[int]bool{}
	for _, d := range defs {
		name := string(d[1])
		off, err := strconv.Atoi(string(d[2]))
		require.NoError(t, err, "offset of %s", name)
		row, ok := rows[name]
		if !assert.True(t, ok, "vmath_amd64.s defines %s, unknown here", name) {
			continue
		}
		assert.Equal(t, 32*row, off, "%s: offset of row %d", name, row)
		seen[row] = true
	}
	assert.Equal(t, nConst, len(defs), "constants vmath_amd64.s names, against vconst's rows")
	assert.Equal(t, nConst, len(seen), "rows of vconst vmath_amd64.s names")
}
