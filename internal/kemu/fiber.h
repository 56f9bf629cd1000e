// fiber.h: user-mode execution contexts (fibers) for the emulator's
// threads. A hand-written switch saves the callee-saved registers and the
// floating-point control word on x86-64 and arm64 (Linux and macOS); other
// targets, or builds with GOLF_EMU_UCONTEXT defined (the Go build tag
// golf_emu_ucontext), use makecontext/swapcontext.
#ifndef GOLF_EMU_FIBER_H
#define GOLF_EMU_FIBER_H

#include <cstddef>

#if !defined(GOLF_EMU_UCONTEXT) && !defined(__x86_64__) && !defined(__aarch64__)
#define GOLF_EMU_UCONTEXT 1
#endif

#ifdef GOLF_EMU_UCONTEXT
#ifdef __APPLE__
#define _XOPEN_SOURCE 700
#endif
#include <ucontext.h>
#endif

namespace golf_emu {

struct Context {
#ifdef GOLF_EMU_UCONTEXT
  ucontext_t uc;
#else
  void* sp;  // saved stack pointer; the registers are on that stack
#endif
};

// context_init makes ctx start entry() on the stack [base, base+size) the
// first time it is switched to. entry must never return.
void context_init(Context* ctx, void* base, size_t size, void (*entry)());

// context_switch saves the running context in from and resumes to.
void context_switch(Context* from, Context* to);

// context_kind names the implementation ("x86-64 asm", "arm64 asm",
// "ucontext").
const char* context_kind();

}  // namespace golf_emu

#endif  // GOLF_EMU_FIBER_H
