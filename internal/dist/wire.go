package dist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// ProtocolVersion is the version of the rendezvous and control protocol a
// hello carries; rank 0 refuses another.
const ProtocolVersion = 1

const helloMagic = "golfdist"

// maxFrame bounds a frame's length, against a stray connection's bytes.
const maxFrame = 16 << 20

// Message types.
const (
	msgHello   = 1 // magic, version u16, rank u32, size u32, job id string
	msgWelcome = 2 // payload bytes
	msgRefuse  = 3 // reason string
	msgPing    = 4 // nothing
	msgColl    = 5 // seq u64, kind u8, tag i64, n u32, n × f64 bits
	msgResult  = 6 // as msgColl
	msgAbort   = 7 // origin rank u32, lost u8, reason string
	msgBye     = 8 // nothing
)

// Collective kinds.
const (
	collAgree   = 1
	collMax     = 2
	collSum     = 3
	collBarrier = 4
)

func collName(kind byte) string {
	switch kind {
	case collAgree:
		return "Agree"
	case collMax:
		return "AllReduceMax"
	case collSum:
		return "AllReduceSum"
	case collBarrier:
		return "Barrier"
	}
	return fmt.Sprintf("collective %d", kind)
}

type msg struct {
	typ  byte
	body []byte
}

// writeFrame writes one frame in a single Write.
func writeFrame(w io.Writer, typ byte, body []byte) error {
	buf := make([]byte, 5+len(body))
	binary.BigEndian.PutUint32(buf, uint32(1+len(body)))
	buf[4] = typ
	copy(buf[5:], body)
	_, err := w.Write(buf)
	return err
}

func readFrame(r io.Reader) (msg, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return msg{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < 1 || n > maxFrame {
		return msg{}, fmt.Errorf("bad frame length %d", n)
	}
	body := make([]byte, n-1)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return msg{}, err
	}
	return msg{typ: hdr[4], body: body}, nil
}

// enc builds a body.
type enc struct{ b []byte }

func (e *enc) u8(v byte)    { e.b = append(e.b, v) }
func (e *enc) u16(v uint16) { e.b = binary.BigEndian.AppendUint16(e.b, v) }
func (e *enc) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *enc) str(s string) { e.u32(uint32(len(s))); e.b = append(e.b, s...) }

// dec reads a body; a short body sets bad.
type dec struct {
	b   []byte
	bad bool
}

func (d *dec) take(n int) []byte {
	if d.bad || n < 0 || len(d.b) < n {
		d.bad = true
		return make([]byte, max(n, 0))
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
func (d *dec) u8() byte    { return d.take(1)[0] }
func (d *dec) u16() uint16 { return binary.BigEndian.Uint16(d.take(2)) }
func (d *dec) u32() uint32 { return binary.BigEndian.Uint32(d.take(4)) }
func (d *dec) u64() uint64 { return binary.BigEndian.Uint64(d.take(8)) }
func (d *dec) str() string {
	n := d.u32()
	if int64(n) > int64(len(d.b)) {
		d.bad = true
		return ""
	}
	return string(d.take(int(n)))
}
func (d *dec) done() error {
	if d.bad || len(d.b) != 0 {
		return errors.New("malformed message")
	}
	return nil
}

type hello struct {
	magic      string
	version    int
	rank, size int
	job        string
}

func (h hello) encode() []byte {
	var e enc
	e.b = append(e.b, helloMagic...)
	e.u16(uint16(h.version))
	e.u32(uint32(h.rank))
	e.u32(uint32(h.size))
	e.str(h.job)
	return e.b
}

func decodeHello(b []byte) (hello, error) {
	d := dec{b: b}
	h := hello{magic: string(d.take(len(helloMagic)))}
	if d.bad || h.magic != helloMagic {
		return h, errors.New("not a golf dist hello")
	}
	h.version = int(d.u16())
	h.rank = int(int32(d.u32()))
	h.size = int(int32(d.u32()))
	h.job = d.str()
	return h, d.done()
}

type coll struct {
	seq    uint64
	kind   byte
	tag    int64
	values []float64
}

func (c coll) encode() []byte {
	var e enc
	e.u64(c.seq)
	e.u8(c.kind)
	e.u64(uint64(c.tag))
	e.u32(uint32(len(c.values)))
	for _, v := range c.values {
		e.u64(math.Float64bits(v))
	}
	return e.b
}

func decodeColl(b []byte) (coll, error) {
	d := dec{b: b}
	c := coll{seq: d.u64(), kind: d.u8(), tag: int64(d.u64())}
	n := d.u32()
	if int64(n)*8 != int64(len(d.b)) {
		return c, errors.New("malformed message")
	}
	c.values = make([]float64, n)
	for i := range c.values {
		c.values[i] = math.Float64frombits(d.u64())
	}
	return c, d.done()
}

type abort struct {
	origin int
	lost   bool
	reason string
}

func (a abort) encode() []byte {
	var e enc
	e.u32(uint32(a.origin))
	if a.lost {
		e.u8(1)
	} else {
		e.u8(0)
	}
	e.str(a.reason)
	return e.b
}

func decodeAbort(b []byte) (abort, error) {
	d := dec{b: b}
	a := abort{origin: int(int32(d.u32())), lost: d.u8() != 0, reason: d.str()}
	return a, d.done()
}

func encodeString(s string) []byte {
	var e enc
	e.str(s)
	return e.b
}

func decodeString(b []byte) (string, error) {
	d := dec{b: b}
	s := d.str()
	return s, d.done()
}
