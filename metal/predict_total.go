package metal

// PredictedTotal is the cost model's total over the dispatches recorded
// since the last ResetPrediction: FLOPs, compulsory bytes and dispatches.
func (b *Backend) PredictedTotal() (flops, bytes float64, dispatches int, err error) {
	p, err := b.Predict()
	if err != nil {
		return 0, 0, 0, err
	}
	return p.Total.FLOPs, p.Total.Bytes, p.Dispatches, nil
}
