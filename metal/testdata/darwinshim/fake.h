// The fake Metal classes and the call log of fake.m, for main.m.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

extern char golf_log[]; // every call the fakes received, one line per command
extern int fake_cbs_made; // command buffers made so far (their ids)
extern int fake_fail_cb;  // id of the command buffer that completes with an error
extern int fake_no_cb;    // when set, the queue gives no command buffer
extern int fake_waits;    // waitUntilCompleted calls
extern int fake_finished_below; // committed command buffers with a smaller id finish without a wait

// FakeObj stands for buffers and pipeline states; the log names it by tag.
@interface FakeObj : NSObject <MTLBuffer, MTLComputePipelineState> {
@public
	int tag;
}
@end

@interface FakeQueue : NSObject <MTLCommandQueue>
@end
