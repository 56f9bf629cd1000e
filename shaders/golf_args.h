// golf_args.h: the argument structs of the Metal kernels, shared by the
// shaders, the Go host (package shaders mirrors every struct field by field;
// a test in metal/emu checks sizes and offsets against the C++ compiler) and
// the emulator. Fields are 32-bit scalars only (uint, int, float), so MSL,
// C++ and Go lay them out the same way: no vectors, bools or pointers.
//
// It also holds instantiate_kernel, the one way a kernel enters the library.
#ifndef GOLF_ARGS_H
#define GOLF_ARGS_H

// instantiate_kernel(host, func, targs...) instantiates the kernel template
// func<targs...> under the library name host. Each shader file defines one
// instantiation macro over (dtype name, type) that expands to these. Outside
// the Metal compiler (the emulator compiles the shaders as C++, where an
// explicit instantiation takes no attributes) it is a plain instantiation:
// the emulator's generator reads the host names from the calls.
#if defined(__METAL_VERSION__)
#define instantiate_kernel(host, func, ...) \
  template [[host_name(host)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
#else
#define instantiate_kernel(host, func, ...) \
  template decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
#endif

// EltwiseArgs: an elementwise kernel over n elements.
struct EltwiseArgs {
  uint n;
};

// RMSNormArgs: rows × cols, normalised along cols.
struct RMSNormArgs {
  uint rows;
  uint cols;
  float eps;
};

#endif  // GOLF_ARGS_H
