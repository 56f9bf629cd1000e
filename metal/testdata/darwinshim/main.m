// Runs the Objective-C shim of runtime_darwin.go (extracted into shim.m by
// runtime_shim_test.go) against the fake Metal of fake.m: device fallback,
// the macOS version, the encoding of the dispatch words, carrying out the
// Go side's command-buffer plan (commit before or after a dispatch, retire
// the oldest in-flight buffers first), refusing a plan that would exceed
// the in-flight limit, waits and polls, failure reports (description,
// domain and code kept apart), and that every command buffer and encoder
// is released, each after its work completed.
#include "shim.m"
#import "fake.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: CHECK failed: %s\nlog:\n%s\n", __FILE__, __LINE__, #c, golf_log); exit(1); } } while (0)

static void set_dispatch(golf_stream* s, FakeObj* b0, FakeObj* b1, uint64_t off, int withTg) {
	uint64_t* w = s->words;
	w[0] = 3; w[1] = 1; w[2] = 1; w[3] = 64; w[4] = 1; w[5] = 1;
	w[6] = 4; w[7] = withTg ? 2 : 0;
	w[8] = 0; w[9] = 0;
	uint64_t* a = w + GOLF_HEADER_WORDS;
	a[0] = GOLF_ARG_BUFFER; a[1] = (uint64_t)(uintptr_t)b0; a[2] = off;
	a[3] = GOLF_ARG_NONE;
	a[6] = GOLF_ARG_BUFFER; a[7] = (uint64_t)(uintptr_t)b1; a[8] = 0;
	a[9] = GOLF_ARG_BYTES; a[11] = 4;
	memcpy(s->arena + 3 * GOLF_BYTES_CAP, "\x01\x02\x03\x04", 4);
	w[GOLF_TG_BASE] = 0; w[GOLF_TG_BASE + 1] = 32;
}

static void set_plan(golf_stream* s, uint64_t flags, uint64_t retire) {
	s->words[8] = flags;
	s->words[9] = retire;
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
	int major = 0, minor = 0;
	golf_macos_version(&major, &minor);
	CHECK(major == 14 && minor == 2);
	base = golf_live_objects;

	FakeQueue* q = [[FakeQueue alloc] init];
	FakeObj* pso = [[FakeObj alloc] init]; pso->tag = 7;
	FakeObj* b0 = [[FakeObj alloc] init]; b0->tag = 100;
	FakeObj* b1 = [[FakeObj alloc] init]; b1->tag = 101;
	golf_stream* s = golf_stream_new(q);
	CHECK(golf_stream_words(s) == s->words);

	// 7 dispatches, the plan committing after every third: cb0, cb1
	// committed, cb2 open.
	for (int i = 0; i < 7; i++) {
		set_dispatch(s, b0, b1, 16 * i, i == 0);
		set_plan(s, i % 3 == 2 ? GOLF_COMMIT_AFTER : 0, 0);
		CHECK(golf_dispatch(s, pso) == 0);
	}
	CHECK(fake_cbs_made == 3 && s->ncommitted == 2 && s->cb != nil);
	CHECK(strstr(golf_log, "cb0\nenc0\npso7 buf0=100+0 buf2=101+0 bytes3[01020304] tg1=32 go(3,1,1)x(64,1,1)\n"));
	CHECK(strstr(golf_log, "pso7 buf0=100+16 buf2=101+0 bytes3[01020304] go(3,1,1)x(64,1,1)\n"));
	CHECK(strstr(golf_log, "go(3,1,1)x(64,1,1)\nend0\ncommit0\ncb1\nenc1\n"));
	CHECK(strstr(golf_log, "end1\ncommit1\ncb2\nenc2\npso7 buf0=100+96 "));
	// commit first: the open cb2 is committed before the dispatch, which
	// opens cb3.
	golf_log[0] = 0;
	set_dispatch(s, b0, b1, 0, 0);
	set_plan(s, GOLF_COMMIT_FIRST, 0);
	CHECK(golf_dispatch(s, pso) == 0);
	CHECK(strcmp(golf_log, "end2\ncommit2\ncb3\nenc3\npso7 buf0=100+0 buf2=101+0 bytes3[01020304] go(3,1,1)x(64,1,1)\n") == 0);
	CHECK(golf_stream_inflight(s) == 3);
	// a wait for the oldest two only; then Sync's plan: commit, wait for all.
	golf_log[0] = 0;
	CHECK(golf_wait(s, 0, 2) == 0);
	CHECK(strcmp(golf_log, "wait0\nwait1\n") == 0 && s->ncommitted == 1 && s->cb != nil);
	CHECK(golf_wait(s, 1, 2) == 0);
	CHECK(strcmp(golf_log, "wait0\nwait1\nend3\ncommit3\nwait2\nwait3\n") == 0);
	CHECK(s->ncommitted == 0 && s->cb == nil && s->enc == nil);
	CHECK(golf_live_objects == base + 4); // queue, pso, b0, b1: every cb and encoder freed
	CHECK(golf_wait(s, 1, 0) == 0);

	// in-flight limit: the plan retires the oldest half before the 17th
	// commit; a plan that does not is refused.
	golf_log[0] = 0;
	int waits0 = fake_waits;
	for (int i = 0; i < GOLF_MAX_COMMITTED; i++) {
		set_dispatch(s, b0, b1, 0, 0);
		set_plan(s, GOLF_COMMIT_AFTER, 0);
		CHECK(golf_dispatch(s, pso) == 0);
	}
	CHECK(s->ncommitted == GOLF_MAX_COMMITTED && fake_waits == waits0);
	set_dispatch(s, b0, b1, 0, 0);
	set_plan(s, GOLF_COMMIT_AFTER, 0);
	CHECK(golf_dispatch(s, pso) == 2); // encoded, but the commit is refused
	CHECK(s->cb != nil && s->ncommitted == GOLF_MAX_COMMITTED);
	golf_log[0] = 0;
	set_dispatch(s, b0, b1, 0, 0);
	set_plan(s, GOLF_COMMIT_AFTER, GOLF_MAX_COMMITTED / 2);
	CHECK(golf_dispatch(s, pso) == 0);
	CHECK(strstr(golf_log, "wait4\nwait5\nwait6\nwait7\nwait8\nwait9\nwait10\nwait11\npso7 ") == golf_log);
	CHECK(strstr(golf_log, "go(3,1,1)x(64,1,1)\nend20\ncommit20\n"));
	CHECK(s->ncommitted == GOLF_MAX_COMMITTED / 2 + 1 && fake_waits - waits0 == GOLF_MAX_COMMITTED / 2);

	// poll: the buffers that finished are released without a wait, up to
	// the first that has not.
	fake_finished_below = 15; // cb12..cb14 of the in-flight cb12..cb20
	golf_log[0] = 0;
	CHECK(golf_poll(s) == 3 && s->ncommitted == GOLF_MAX_COMMITTED / 2 - 2);
	CHECK(golf_log[0] == 0 && fake_waits - waits0 == GOLF_MAX_COMMITTED / 2);
	CHECK(golf_poll(s) == 0);
	CHECK(golf_wait(s, 1, s->ncommitted + 1) == 0);
	CHECK(s->ncommitted == 0 && s->cb == nil);
	CHECK(golf_live_objects == base + 4);

	// a failing command buffer: reported with description, domain and code
	golf_log[0] = 0;
	fake_fail_cb = fake_cbs_made + 1; // the second of the next three
	for (int i = 0; i < 6; i++) {
		set_dispatch(s, b0, b1, 0, 0);
		set_plan(s, i % 2 == 1 ? GOLF_COMMIT_AFTER : 0, 0);
		CHECK(golf_dispatch(s, pso) == 0);
	}
	CHECK(golf_stream_failed(s) == 0);
	CHECK(golf_wait(s, 1, 3) == 0);
	CHECK(golf_stream_failed(s) == 1);
	printf("error: %s | %s | %ld\n", golf_stream_err_desc(s), golf_stream_err_domain(s), golf_stream_err_code(s));
	CHECK(strcmp(golf_stream_err_desc(s), "Insufficient Memory") == 0);
	CHECK(strcmp(golf_stream_err_domain(s), "MTLCommandBufferErrorDomain") == 0);
	CHECK(golf_stream_err_code(s) == 8);
	// the first failure is kept
	golf_stream_inject_failure(s, "injected GPU fault", 2);
	CHECK(strcmp(golf_stream_err_desc(s), "Insufficient Memory") == 0);
	CHECK(golf_live_objects == base + 4);

	// injected failure on a fresh stream
	golf_stream* s2 = golf_stream_new(q);
	golf_stream_inject_failure(s2, "injected GPU fault", 2);
	CHECK(golf_stream_failed(s2) == 1 && golf_stream_err_code(s2) == 2);
	CHECK(strcmp(golf_stream_err_desc(s2), "injected GPU fault") == 0);
	golf_stream_free(s2);

	// no command buffer available
	fake_no_cb = 1;
	set_dispatch(s, b0, b1, 0, 0);
	CHECK(golf_dispatch(s, pso) == 1);
	fake_no_cb = 0;
	CHECK(golf_dispatch(s, pso) == 0);
	golf_stream_free(s); // commits and waits for the open command buffer
	CHECK(golf_live_objects == base + 4);
	CHECK(golf_layout(1) == 10 && golf_layout(3) == 10 + 3 * 31 && golf_layout(4) == 10 + 4 * 31 && golf_layout(9) == -1);
	printf("shim harness: all checks passed\n");
	return 0;
}
