#include "textflag.h"

// func cpuVendor() (ebx, edx, ecx uint32)
TEXT ·cpuVendor(SB), NOSPLIT, $0-12
	XORL AX, AX
	XORL CX, CX
	CPUID
	MOVL BX, ebx+0(FP)
	MOVL DX, edx+4(FP)
	MOVL CX, ecx+8(FP)
	RET
