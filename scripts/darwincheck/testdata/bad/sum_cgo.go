//go:build darwin && cgo

package darwinfixture

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int sum_ints(const int32_t *xs, int n) {
	int s = 0;
	for (int i = 0; i < n; i++) s += xs[i];
	return s;
}
*/
import "C"

import "unsafe"

// cgoSum adds xs in C.
func cgoSum(xs []int32) int {
	if len(xs) == 0 {
		return 0
	}
	name := C.CString("sum")
	defer C.free(unsafe.Pointer(name))
	_ = C.strlen(name)
	var n C.int = C.int(len(xs))
	var count string = len(xs) // want "cannot use len\(xs\) \(value of type int\) as string value"
	_ = count
	return int(C.sum_ints((*C.int32_t)(unsafe.Pointer(&xs[0])), n))
}
