package metal

import "unsafe"

// unsafeBytes views words as bytes (8-byte aligned backing memory).
func unsafeBytes(words []uint64) []byte {
	if len(words) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 8*len(words))
}
