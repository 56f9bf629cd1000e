package metal

// nullStream gives a test runtime whose Dispatch runs nothing the stream
// methods of Runtime: no command buffer ever needs waiting for.
type nullStream struct{}

func (nullStream) LastSerial() uint64 { return 0 }
func (nullStream) Completed() uint64  { return 0 }
func (nullStream) Wait(uint64) error  { return nil }
func (nullStream) Stats() Stats       { return Stats{} }
