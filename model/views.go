package model

import "github.com/golf-ml/golf/backend"

// viewCache keeps the views a step makes of its tensors (per-head shapes,
// row ranges of the logit chunks, skip-weight rows), so that a training
// step after the first allocates nothing: a view is a small heap object,
// and a step makes a few hundred. Views share their parent's storage;
// FreeWorkspaces drops them with the workspaces.
type viewCache map[viewKey]*backend.Tensor

// viewKey names one view: rows [start, start+count) of t, or t's rows
// split into heads (D = the head dim), or t flattened to one dimension.
type viewKey struct {
	t            *backend.Tensor
	kind         viewKind
	start, count int
}

type viewKind int

const (
	viewRows viewKind = iota
	viewHeads
	viewFlat
	viewSkipRow
)

func (m *Model) view(k viewKey, make func() *backend.Tensor) *backend.Tensor {
	if v, ok := m.views[k]; ok {
		return v
	}
	if m.views == nil {
		m.views = viewCache{}
	}
	v := make()
	m.views[k] = v
	return v
}

// rows is t.Rows(start, count), cached.
func (m *Model) rows(t *backend.Tensor, start, count int) *backend.Tensor {
	return m.view(viewKey{t, viewRows, start, count}, func() *backend.Tensor { return t.Rows(start, count) })
}

// flat is t.Reshape(n), cached.
func (m *Model) flat(t *backend.Tensor, n int) *backend.Tensor {
	return m.view(viewKey{t, viewFlat, 0, n}, func() *backend.Tensor { return t.Reshape(n) })
}
