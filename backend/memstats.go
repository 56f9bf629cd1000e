package backend

// MemoryStats is an optional interface of a Backend that counts the bytes
// of the tensors it holds, as PyTorch's caching allocator counts
// torch.cuda.memory_allocated. A tensor's bytes are its storage (elements ×
// dtype size) from New until Free; views made by Rows and Reshape own no
// storage and count nothing. Scratch a backend keeps for itself (packing
// panels, command buffers) is not a tensor and is not counted.
type MemoryStats interface {
	// AllocatedBytes returns the bytes of the tensors live now and the
	// most that were live at once since the backend was made or since the
	// last ResetPeakAllocated.
	AllocatedBytes() (live, peak int64)
	// ResetPeakAllocated starts a new peak from the bytes live now.
	ResetPeakAllocated()
}
