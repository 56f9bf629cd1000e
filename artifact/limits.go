package artifact

import "fmt"

// DefaultMaxBytes is the cap the readers apply when the caller gives none:
// the decoded arrays of one artifact (and, for the int8 container, its
// inflated .npz stream) may hold at most 4 GiB, the fp32 weights of a
// model of a billion parameters, 60 times the baseline. Callers that know
// the model's shape pass a tighter cap with MaxBytes.
const DefaultMaxBytes = 4 << 30

// ReadOption adjusts what ReadNPY, ReadNPZArrays, ReadNPZ, InspectNPZ,
// DecodeQuantized, ReadQuantized, LoadQuantized and InspectQuantized accept.
type ReadOption func(*readLimits)

// MaxBytes caps the bytes a reader may decode: the sum of the arrays' data
// and, where the artifact is compressed, the inflated stream. Sizes are
// checked against the cap before anything of that size is allocated, from
// what the artifact declares (zip member sizes, .npy shapes); an artifact
// over the cap is an error naming the cap. n must be positive.
func MaxBytes(n int64) ReadOption {
	if n <= 0 {
		panic(fmt.Sprintf("artifact: MaxBytes(%d): the cap must be positive", n))
	}
	return func(l *readLimits) { l.maxBytes = n }
}

// readLimits is the options' result: a byte budget that readers draw from.
type readLimits struct {
	maxBytes int64 // the cap
	left     int64 // what is still allowed
}

func newLimits(opts []ReadOption) *readLimits {
	l := &readLimits{maxBytes: DefaultMaxBytes}
	for _, o := range opts {
		o(l)
	}
	l.left = l.maxBytes
	return l
}

// take draws n bytes of what for the budget, or says that they exceed it.
func (l *readLimits) take(n int64, what string) error {
	if n < 0 || n > l.left {
		return fmt.Errorf("%s needs %d bytes, over the %d-byte cap on what this artifact may decode (%d left)",
			what, n, l.maxBytes, l.left)
	}
	l.left -= n
	return nil
}
