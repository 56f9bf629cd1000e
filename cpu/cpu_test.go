package cpu_test

import (
	"testing"

	"github.com/golf-ml/golf/backend/backendtest"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/modeltest"
)

func TestConformance(t *testing.T) { backendtest.RunAll(t, cpu.New()) }

func TestTrainingStep(t *testing.T) {
	modeltest.RunTrainingStep(t, cpu.New(), backendtest.Reference())
}

func TestFusedIdentity(t *testing.T) { modeltest.RunFusedIdentity(t, cpu.New()) }
