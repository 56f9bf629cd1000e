// want: thread-local thread_local variable
#include <metal_stdlib>
using namespace metal;

inline uint counter() {
  thread_local uint calls = 0;
  return ++calls;
}
