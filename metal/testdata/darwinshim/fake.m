// Implementations of the stand-in Foundation classes and of a fake Metal
// device, queue, command buffers and encoders that log what they receive.
#import "fake.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long golf_live_objects = 0;
static NSAutoreleasePool* current_pool = nil;

@implementation NSObject
+ (id)alloc { NSObject* o = class_createInstance(self, 0); o->rc = 1; golf_live_objects++; return o; }
+ (id)new { return [[self alloc] init]; }
- (id)init { return self; }
- (id)retain { rc++; return self; }
- (void)release { if (--rc == 0) [self dealloc]; }
- (id)autorelease { if (current_pool == nil) { fprintf(stderr, "autorelease with no pool\n"); abort(); } [current_pool add:self]; return self; }
- (void)dealloc { golf_live_objects--; object_dispose(self); }
- (int)retainCount { return rc; }
@end

@implementation NSAutoreleasePool
- (id)init { prev = current_pool; current_pool = self; return self; }
- (void)add:(id)o { if (n == 4096) abort(); objs[n++] = o; }
- (void)drain { if (current_pool != self) { fprintf(stderr, "pool drained out of order\n"); abort(); } current_pool = prev; for (int i = 0; i < n; i++) [objs[i] release]; [self release]; }
- (id)autorelease { abort(); }
@end

@implementation FakeConstString
- (const char*)UTF8String { return c_string; }
- (id)retain { return self; }
- (void)release {}
@end

@implementation NSString
+ (id)stringWithUTF8String:(const char*)c { NSString* x = [[self alloc] init]; x->s = strdup(c); return [x autorelease]; }
+ (id)stringWithFormat:(NSString*)fmt, ... {
	char out[4096] = {0};
	size_t o = 0;
	va_list ap;
	va_start(ap, fmt);
	for (const char* f = [fmt UTF8String]; *f; f++) {
		if (*f != '%') { out[o++] = *f; continue; }
		f++;
		if (*f == '@') { id a = va_arg(ap, id); o += snprintf(out + o, sizeof out - o, "%s", [a UTF8String]); }
		else if (!strncmp(f, "ld", 2)) { o += snprintf(out + o, sizeof out - o, "%ld", va_arg(ap, long)); f++; }
		else if (!strncmp(f, "lu", 2)) { o += snprintf(out + o, sizeof out - o, "%lu", va_arg(ap, unsigned long)); f++; }
		else abort();
	}
	va_end(ap);
	return [self stringWithUTF8String:out];
}
- (const char*)UTF8String { return s; }
- (void)dealloc { free(s); [super dealloc]; }
@end

@implementation NSArray
- (NSUInteger)count { return n; }
- (id)objectAtIndex:(NSUInteger)i { return items[i]; }
- (void)dealloc { for (NSUInteger i = 0; i < n; i++) [items[i] release]; [super dealloc]; }
@end

@implementation NSDictionary
+ (id)dictionaryWithObjects:(const id[])objects forKeys:(const id[])keys count:(NSUInteger)cnt {
	NSDictionary* d = [[self alloc] init];
	for (NSUInteger i = 0; i < cnt; i++) { d->k[i] = [keys[i] retain]; d->v[i] = [objects[i] retain]; }
	d->n = cnt;
	return [d autorelease];
}
- (id)objectForKey:(id)key {
	for (NSUInteger i = 0; i < n; i++) if (!strcmp([k[i] UTF8String], [key UTF8String])) return v[i];
	return nil;
}
- (void)dealloc { for (NSUInteger i = 0; i < n; i++) { [k[i] release]; [v[i] release]; } [super dealloc]; }
@end

NSString* const NSLocalizedDescriptionKey = (NSString*)@"NSLocalizedDescription";
NSString* const MTLCommandBufferErrorDomain = (NSString*)@"MTLCommandBufferErrorDomain";

@implementation NSError
+ (id)errorWithDomain:(NSString*)d code:(NSInteger)c userInfo:(NSDictionary*)i {
	NSError* e = [[self alloc] init]; e->domain = [d retain]; e->code = c; e->info = [i retain]; return [e autorelease];
}
- (NSString*)localizedDescription { id v = [info objectForKey:NSLocalizedDescriptionKey]; return v ? v : [NSString stringWithUTF8String:"The operation couldn't be completed."]; }
- (NSString*)domain { return domain; }
- (NSInteger)code { return code; }
- (void)dealloc { [domain release]; [info release]; [super dealloc]; }
@end

@implementation NSProcessInfo
+ (NSProcessInfo*)processInfo { static NSProcessInfo* p; if (!p) p = [[NSProcessInfo alloc] init]; return p; }
- (NSOperatingSystemVersion)operatingSystemVersion { NSOperatingSystemVersion v = {14, 2, 1}; return v; }
@end

// ---- fake Metal ----
char golf_log[1 << 20];
static void logf_(const char* fmt, ...) {
	va_list ap; va_start(ap, fmt);
	size_t n = strlen(golf_log);
	vsnprintf(golf_log + n, sizeof golf_log - n, fmt, ap);
	va_end(ap);
}
int fake_cbs_made = 0, fake_fail_cb = -1, fake_no_cb = 0, fake_waits = 0, fake_finished_below = 0;

@interface FakeDevice : NSObject <MTLDevice> @end
@implementation FakeDevice @end
@implementation FakeObj @end

@interface FakeEnc : NSObject <MTLComputeCommandEncoder> { @public int id_; int ended; } @end
@implementation FakeEnc
- (void)setComputePipelineState:(id<MTLComputePipelineState>)s { logf_("pso%d ", ((FakeObj*)s)->tag); }
- (void)setBytes:(const void*)b length:(NSUInteger)l atIndex:(NSUInteger)i { logf_("bytes%lu[", (unsigned long)i); for (NSUInteger k = 0; k < l; k++) logf_("%02x", ((const unsigned char*)b)[k]); logf_("] "); }
- (void)setBuffer:(id<MTLBuffer>)b offset:(NSUInteger)o atIndex:(NSUInteger)i { logf_("buf%lu=%d+%lu ", (unsigned long)i, ((FakeObj*)b)->tag, (unsigned long)o); }
- (void)setThreadgroupMemoryLength:(NSUInteger)l atIndex:(NSUInteger)i { logf_("tg%lu=%lu ", (unsigned long)i, (unsigned long)l); }
- (void)dispatchThreadgroups:(MTLSize)g threadsPerThreadgroup:(MTLSize)t { if (ended) abort(); logf_("go(%lu,%lu,%lu)x(%lu,%lu,%lu)\n", g.width, g.height, g.depth, t.width, t.height, t.depth); }
- (void)endEncoding { if (ended) abort(); ended = 1; logf_("end%d\n", id_); }
@end

@interface FakeCB : NSObject <MTLCommandBuffer> { @public int id_; int committed; int done; int hasEnc; } @end
@implementation FakeCB
- (id<MTLComputeCommandEncoder>)computeCommandEncoder { if (hasEnc++) abort(); FakeEnc* e = [[FakeEnc alloc] init]; e->id_ = id_; logf_("enc%d\n", id_); return [e autorelease]; }
- (void)commit { if (committed++) abort(); logf_("commit%d\n", id_); }
- (void)waitUntilCompleted { if (!committed) abort(); fake_waits++; done = 1; logf_("wait%d\n", id_); }
- (MTLCommandBufferStatus)status { if (committed && id_ < fake_finished_below) done = 1; if (!done) return 2; return id_ == fake_fail_cb ? MTLCommandBufferStatusError : MTLCommandBufferStatusCompleted; }
- (NSError*)error { if (id_ != fake_fail_cb) return nil; return [NSError errorWithDomain:MTLCommandBufferErrorDomain code:8 userInfo:@{NSLocalizedDescriptionKey: [NSString stringWithUTF8String:"Insufficient Memory"]}]; }
- (void)dealloc { if (!done) { fprintf(stderr, "cb%d freed before completion\n", id_); abort(); } [super dealloc]; }
@end

@implementation FakeQueue
- (id<MTLCommandBuffer>)commandBuffer { if (fake_no_cb) return nil; FakeCB* c = [[FakeCB alloc] init]; c->id_ = fake_cbs_made++; logf_("cb%d\n", c->id_); return [c autorelease]; }
@end

id<MTLDevice> MTLCreateSystemDefaultDevice(void) { return nil; }
NSArray* MTLCopyAllDevices(void) { NSArray* a = [[NSArray alloc] init]; a->items[0] = [[FakeDevice alloc] init]; a->n = 1; return a; }
