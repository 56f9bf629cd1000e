// A golf_args.h for the layout fixture: its Go mirror in the test declares
// n as a uint64, so clang's layout for arm64 and Go's differ.
#ifndef LAYOUT_ARGS_H
#define LAYOUT_ARGS_H

struct LayoutArgs {
  uint n;
  float scale;
};

#endif
