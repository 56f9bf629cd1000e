package cpu_test

import (
	"testing"

	"github.com/golf-ml/golf/backend/backendtest"
	"github.com/golf-ml/golf/cpu"
)

func TestConformance(t *testing.T) { backendtest.RunAll(t, cpu.New()) }
