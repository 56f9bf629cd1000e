package shaders

// The Go mirrors of the argument structs of golf_args.h, field by field
// (C snake_case names in CamelCase). Package metal/emu's tests check every
// size and offset against the C++ compiler's layout of the header.

// EltwiseArgs mirrors struct EltwiseArgs: an elementwise kernel over N
// elements.
type EltwiseArgs struct {
	N uint32
}

// RMSNormArgs mirrors struct RMSNormArgs: Rows × Cols, normalised along
// Cols, with epsilon Eps.
type RMSNormArgs struct {
	Rows uint32
	Cols uint32
	Eps  float32
}
