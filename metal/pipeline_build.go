package metal

import "fmt"

// pipelineAttempts is how many times a runtime asks the device for one
// pipeline before it reports the failure. The paravirtual GPU of hosted
// macOS runners has been seen to refuse newComputePipelineStateWithFunction
// for a trivial kernel, with no diagnostic, and to build the same kernel
// later in the same process; one retry rides that out, and a kernel that
// fails twice is reported, named, with the device's message.
const pipelineAttempts = 2

// createPipeline runs create (one attempt at building pipeline name; its
// argument is the attempt, from 1) until it succeeds or pipelineAttempts
// have failed. It returns the number of retries made and, after the last
// failure, an error naming the kernel and carrying the last attempt's
// message.
func createPipeline(name string, create func(attempt int) error) (retries int, err error) {
	for attempt := 1; attempt <= pipelineAttempts; attempt++ {
		if err = create(attempt); err == nil {
			return attempt - 1, nil
		}
	}
	return pipelineAttempts - 1, fmt.Errorf("metal: the pipeline of kernel %s did not build (%d attempts); the device said: %v",
		name, pipelineAttempts, err)
}
