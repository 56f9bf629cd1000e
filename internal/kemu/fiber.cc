// fiber.cc: the context switch behind the emulator's fibers (see fiber.h).
#include "fiber.h"

#include <cstdint>
#include <cstdlib>

#ifdef __APPLE__
#define GOLF_EMU_SYM(name) "_" #name
#define GOLF_EMU_FUNC_BEGIN(name) ".globl " GOLF_EMU_SYM(name) "\n.p2align 4\n" GOLF_EMU_SYM(name) ":\n"
#else
#define GOLF_EMU_SYM(name) #name
#define GOLF_EMU_FUNC_BEGIN(name) \
  ".globl " #name "\n.hidden " #name "\n.type " #name ", @function\n.p2align 4\n" #name ":\n"
#endif

extern "C" void golf_emu_ctx_switch(void** save_sp, void* new_sp);
extern "C" void golf_emu_ctx_start();

namespace golf_emu {

#if defined(GOLF_EMU_UCONTEXT)

void context_init(Context* ctx, void* base, size_t size, void (*entry)()) {
  if (getcontext(&ctx->uc) != 0) std::abort();
  ctx->uc.uc_stack.ss_sp = base;
  ctx->uc.uc_stack.ss_size = size;
  ctx->uc.uc_link = nullptr;
  makecontext(&ctx->uc, entry, 0);
}

void context_switch(Context* from, Context* to) {
  if (swapcontext(&from->uc, &to->uc) != 0) std::abort();
}

const char* context_kind() { return "ucontext"; }

#elif defined(__x86_64__)

// golf_emu_ctx_switch(save_sp, new_sp): push the System V callee-saved
// registers and the SSE/x87 control words, save rsp, load new_sp, pop the
// same from there and return into the other context.
// golf_emu_ctx_start: the first return target of a new context; r12 holds
// the entry function. The stack is 16-byte aligned at the call.
asm(".text\n" GOLF_EMU_FUNC_BEGIN(golf_emu_ctx_switch)
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  subq $8, %rsp\n"
    "  stmxcsr (%rsp)\n"
    "  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n"
    "  fldcw 4(%rsp)\n"
    "  addq $8, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    GOLF_EMU_FUNC_BEGIN(golf_emu_ctx_start)
    "  callq *%r12\n"
    "  ud2\n");

void context_init(Context* ctx, void* base, size_t size, void (*entry)()) {
  // Frame popped by golf_emu_ctx_switch, from low to high addresses:
  // mxcsr|fpcw, r15, r14, r13, r12, rbx, rbp, return address.
  uintptr_t top = (reinterpret_cast<uintptr_t>(base) + size) & ~uintptr_t(15);
  top -= 16;  // the 16-aligned rsp at the call in golf_emu_ctx_start
  uint64_t* frame = reinterpret_cast<uint64_t*>(top) - 8;
  frame[0] = 0x1f80u | (uint64_t(0x037fu) << 32);  // default MXCSR and x87 control word
  frame[1] = 0;                                    // r15
  frame[2] = 0;                                    // r14
  frame[3] = 0;                                    // r13
  frame[4] = reinterpret_cast<uint64_t>(entry);    // r12
  frame[5] = 0;                                    // rbx
  frame[6] = 0;                                    // rbp
  frame[7] = reinterpret_cast<uint64_t>(&golf_emu_ctx_start);
  ctx->sp = frame;
}

void context_switch(Context* from, Context* to) { golf_emu_ctx_switch(&from->sp, to->sp); }

const char* context_kind() { return "x86-64 asm"; }

#elif defined(__aarch64__)

// golf_emu_ctx_switch(save_sp, new_sp): store x19–x30, d8–d15 and FPCR in a
// 176-byte frame, save sp, load new_sp, restore from there and return
// through x30. golf_emu_ctx_start: the first return target of a new
// context; x19 holds the entry function.
asm(".text\n" GOLF_EMU_FUNC_BEGIN(golf_emu_ctx_switch)
    "  sub sp, sp, #176\n"
    "  stp x19, x20, [sp, #0]\n"
    "  stp x21, x22, [sp, #16]\n"
    "  stp x23, x24, [sp, #32]\n"
    "  stp x25, x26, [sp, #48]\n"
    "  stp x27, x28, [sp, #64]\n"
    "  stp x29, x30, [sp, #80]\n"
    "  stp d8, d9, [sp, #96]\n"
    "  stp d10, d11, [sp, #112]\n"
    "  stp d12, d13, [sp, #128]\n"
    "  stp d14, d15, [sp, #144]\n"
    "  mrs x9, fpcr\n"
    "  str x9, [sp, #160]\n"
    "  mov x9, sp\n"
    "  str x9, [x0]\n"
    "  mov sp, x1\n"
    "  ldr x9, [sp, #160]\n"
    "  msr fpcr, x9\n"
    "  ldp x19, x20, [sp, #0]\n"
    "  ldp x21, x22, [sp, #16]\n"
    "  ldp x23, x24, [sp, #32]\n"
    "  ldp x25, x26, [sp, #48]\n"
    "  ldp x27, x28, [sp, #64]\n"
    "  ldp x29, x30, [sp, #80]\n"
    "  ldp d8, d9, [sp, #96]\n"
    "  ldp d10, d11, [sp, #112]\n"
    "  ldp d12, d13, [sp, #128]\n"
    "  ldp d14, d15, [sp, #144]\n"
    "  add sp, sp, #176\n"
    "  ret\n"
    GOLF_EMU_FUNC_BEGIN(golf_emu_ctx_start)
    "  blr x19\n"
    "  brk #0\n");

void context_init(Context* ctx, void* base, size_t size, void (*entry)()) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(base) + size) & ~uintptr_t(15);
  uint64_t* frame = reinterpret_cast<uint64_t*>(top - 176);
  for (int i = 0; i < 22; i++) frame[i] = 0;                   // x19..x30, d8..d15, FPCR = 0
  frame[0] = reinterpret_cast<uint64_t>(entry);                // x19
  frame[11] = reinterpret_cast<uint64_t>(&golf_emu_ctx_start);  // x30
  ctx->sp = frame;
}

void context_switch(Context* from, Context* to) { golf_emu_ctx_switch(&from->sp, to->sp); }

const char* context_kind() { return "arm64 asm"; }

#endif

}  // namespace golf_emu
