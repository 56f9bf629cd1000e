// A stand-in for the few Foundation classes the Objective-C shim of
// runtime_darwin.go uses, for running that shim on Linux with clang and GNU
// libobjc (runtime_shim_test.go). Reference counting is real: objects count
// their retains, every autorelease must happen inside a pool, and
// golf_live_objects counts the objects alive so the test can find leaks.
#pragma once
#include <objc/runtime.h>
#include <stdint.h>
#include <stddef.h>
typedef long NSInteger;
typedef unsigned long NSUInteger;
@class NSString;
extern long golf_live_objects;
__attribute__((objc_root_class))
@interface NSObject { Class isa; int rc; }
+ (id)alloc;
+ (id)new;
- (id)init;
- (id)retain;
- (void)release;
- (id)autorelease;
- (void)dealloc;
- (int)retainCount;
@end
@interface NSAutoreleasePool : NSObject { id objs[4096]; int n; NSAutoreleasePool* prev; }
- (void)add:(id)o;
- (void)drain;
@end
@interface NSString : NSObject { char* s; }
+ (id)stringWithUTF8String:(const char*)s;
+ (id)stringWithFormat:(NSString*)fmt, ...;
- (const char*)UTF8String;
@end
__attribute__((objc_root_class))
@interface FakeConstString { Class isa; const char* c_string; unsigned int len; }
- (const char*)UTF8String;
@end
@interface NSArray<ObjectType> : NSObject { @public id items[8]; NSUInteger n; }
- (NSUInteger)count;
- (ObjectType)objectAtIndex:(NSUInteger)i;
@end
@interface NSDictionary : NSObject { id k[8]; id v[8]; NSUInteger n; }
+ (id)dictionaryWithObjects:(const id[])objects forKeys:(const id[])keys count:(NSUInteger)cnt;
- (id)objectForKey:(id)key;
@end
typedef NSString* NSErrorDomain;
extern NSString* const NSLocalizedDescriptionKey;
@interface NSError : NSObject { NSString* domain; NSInteger code; NSDictionary* info; }
+ (id)errorWithDomain:(NSString*)domain code:(NSInteger)code userInfo:(NSDictionary*)dict;
- (NSString*)localizedDescription;
- (NSString*)domain;
- (NSInteger)code;
@end
typedef struct { NSInteger majorVersion, minorVersion, patchVersion; } NSOperatingSystemVersion;
@interface NSProcessInfo : NSObject
+ (NSProcessInfo*)processInfo;
- (NSOperatingSystemVersion)operatingSystemVersion;
@end
