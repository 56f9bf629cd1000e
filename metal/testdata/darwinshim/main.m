// Runs the Objective-C shim of runtime_darwin.go (extracted into shim.m by
// runtime_shim_test.go) against the fake Metal of fake.m: device fallback,
// the encoding of the dispatch words, command-buffer batching, the limit on
// committed command buffers, failure reporting, and that every command
// buffer and encoder is released, each after its work completed.
#include "shim.m"
#import "fake.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: CHECK failed: %s\nlog:\n%s\n", __FILE__, __LINE__, #c, golf_log); exit(1); } } while (0)

static void set_dispatch(golf_stream* s, FakeObj* b0, FakeObj* b1, uint64_t off, int withTg) {
	uint64_t* w = s->words;
	w[0] = 3; w[1] = 1; w[2] = 1; w[3] = 64; w[4] = 1; w[5] = 1;
	w[6] = 4; w[7] = withTg ? 2 : 0;
	uint64_t* a = w + GOLF_HEADER_WORDS;
	a[0] = GOLF_ARG_BUFFER; a[1] = (uint64_t)(uintptr_t)b0; a[2] = off;
	a[3] = GOLF_ARG_NONE;
	a[6] = GOLF_ARG_BUFFER; a[7] = (uint64_t)(uintptr_t)b1; a[8] = 0;
	a[9] = GOLF_ARG_BYTES; a[11] = 4;
	memcpy(s->arena + 3 * GOLF_BYTES_CAP, "\x01\x02\x03\x04", 4);
	w[GOLF_TG_BASE] = 0; w[GOLF_TG_BASE + 1] = 32;
}

int main(void) {
	long base = golf_live_objects;
	// device fallback: default nil, first of MTLCopyAllDevices, retained, array freed
	void* dev = golf_default_device();
	CHECK(dev != NULL);
	CHECK([(id)dev retainCount] == 1);
	CHECK(golf_live_objects == base + 1);
	golf_release(dev);
	CHECK(golf_live_objects == base);
	CHECK(golf_macos_major() == 14);
	base = golf_live_objects;

	FakeQueue* q = [[FakeQueue alloc] init];
	FakeObj* pso = [[FakeObj alloc] init]; pso->tag = 7;
	FakeObj* b0 = [[FakeObj alloc] init]; b0->tag = 100;
	FakeObj* b1 = [[FakeObj alloc] init]; b1->tag = 101;
	golf_stream* s = golf_stream_new(q, 3);
	CHECK(golf_stream_words(s) == s->words);

	// 7 dispatches at 3 per command buffer: cb0, cb1 committed, cb2 open.
	for (int i = 0; i < 7; i++) {
		set_dispatch(s, b0, b1, 16 * i, i == 0);
		CHECK(golf_dispatch(s, pso) == 0);
	}
	CHECK(fake_cbs_made == 3 && s->ncommitted == 2 && s->cb != nil && s->inBatch == 1);
	CHECK(strstr(golf_log, "cb0\nenc0\npso7 buf0=100+0 buf2=101+0 bytes3[01020304] tg1=32 go(3,1,1)x(64,1,1)\n"));
	CHECK(strstr(golf_log, "pso7 buf0=100+16 buf2=101+0 bytes3[01020304] go(3,1,1)x(64,1,1)\n"));
	CHECK(strstr(golf_log, "go(3,1,1)x(64,1,1)\nend0\ncommit0\ncb1\nenc1\n"));
	CHECK(strstr(golf_log, "end1\ncommit1\ncb2\nenc2\npso7 buf0=100+96 "));
	CHECK(golf_sync(s) == 0);
	CHECK(strstr(golf_log, "end2\ncommit2\nwait0\nwait1\nwait2\n"));
	CHECK(s->ncommitted == 0 && s->cb == nil && s->enc == nil);
	CHECK(golf_live_objects == base + 4); // queue, pso, b0, b1: every cb and encoder freed
	CHECK(golf_sync(s) == 0);

	// in-flight limit: batch 1, 40 dispatches; never more than 16 committed.
	golf_log[0] = 0;
	s->batch = 1;
	int waits0 = fake_waits;
	for (int i = 0; i < 40; i++) {
		set_dispatch(s, b0, b1, 0, 0);
		CHECK(golf_dispatch(s, pso) == 0);
		CHECK(s->ncommitted <= GOLF_MAX_COMMITTED && s->ncommitted >= 1);
	}
	// commits 1..16 fill the list, the 17th retires 8 (cb3..cb10), etc.
	CHECK(strstr(golf_log, "end19\nwait3\nwait4\nwait5\nwait6\nwait7\nwait8\nwait9\nwait10\ncommit19\n"));
	CHECK(golf_sync(s) == 0);
	CHECK(fake_waits - waits0 == 40);
	CHECK(golf_live_objects == base + 4);

	// a failing command buffer: reported once, with description, domain and code
	golf_log[0] = 0;
	s->batch = 2;
	fake_fail_cb = fake_cbs_made + 1; // the second of the next three
	for (int i = 0; i < 6; i++) {
		set_dispatch(s, b0, b1, 0, 0);
		CHECK(golf_dispatch(s, pso) == 0);
	}
	CHECK(golf_sync(s) == 1);
	printf("error: %s\n", golf_stream_error(s));
	CHECK(strcmp(golf_stream_error(s), "Insufficient Memory (MTLCommandBufferErrorDomain code 8)") == 0);
	CHECK(golf_sync(s) == 0);
	CHECK(golf_live_objects == base + 4);

	// injected failure
	golf_stream_inject_failure(s, "injected GPU fault");
	CHECK(golf_sync(s) == 1);
	CHECK(strcmp(golf_stream_error(s), "injected GPU fault (MTLCommandBufferErrorDomain code 1)") == 0);
	CHECK(golf_sync(s) == 0);

	// no command buffer available
	fake_no_cb = 1;
	set_dispatch(s, b0, b1, 0, 0);
	CHECK(golf_dispatch(s, pso) == 1);
	fake_no_cb = 0;
	CHECK(golf_dispatch(s, pso) == 0);
	golf_stream_free(s); // syncs the open command buffer
	CHECK(golf_live_objects == base + 4);
	CHECK(golf_layout(3) == 8 + 3 * 31 && golf_layout(4) == 8 + 4 * 31 && golf_layout(7) == -1);
	printf("shim harness: all checks passed\n");
	return 0;
}
