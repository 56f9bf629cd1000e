package train

// The arm64 step of .ci/run runs every package's tests under qemu-aarch64
// unless the package says why not, in a line of this form:
//
//golf:qemu-skip its training-run tests do not finish within go test's 10-minute limit under qemu-aarch64 (25 s natively); the backend, model, optimizers and artifacts they train with are tested there in cpu, model, optim and artifact
