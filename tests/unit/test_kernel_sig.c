/* Unit tests of the kernel-signature reader (shim/kernel_sig.c): what it
 * may say about an argument, and when it must say nothing. */
#include <errno.h>
#include <string.h>

#include "shim/shim.h"
#include "tests/unit/runner.h"

enum { U = SHIM_ARG_UNKNOWN, RO = SHIM_ARG_MEM_RO, RW = SHIM_ARG_MEM_RW };

static const char *src =
    "// kernel void commented(__global int *a) {}\n"
    "/* __kernel void also_commented(global int *a) {} */\n"
    "#define KERNEL_IN_MACRO __kernel void hidden(__global int *a) {}\n"
    "typedef __global float *gptr;\n"
    "__kernel void decl(__global int *a);\n"
    "__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n"
    "void add(__global const float *a, const __global float *b,\n"
    "         __global float *restrict out, __constant float *k,\n"
    "         __global float *const p, int n, __local float *tmp,\n"
    "         gptr t, float4 v, __global float2 (*unused)) {\n"
    "    const char *s = \"kernel void fake(__global int *x) {\";\n"
    "}\n"
    "kernel void images(read_only image2d_t a, __write_only image2d_t b,\n"
    "                   image2d_t c, read_write image3d_t d, sampler_t s) {}\n"
    "kernel void none(void) {}\n"
    "kernel void empty() {}\n"
    "#ifdef TWICE\n"
    "kernel void twice(__global int *a) {}\n"
    "#else\n"
    "kernel void twice(__global const int *a) {}\n"
    "#endif\n"
    "__kernel void decl(__global int *a) { a[0] = 1; }\n";

TEST(kernel_sig_classes)
{
    uint8_t cls[10];
    static const uint8_t add[10] = {RO, RO, RW, RO, RW, U, U, U, U, U};
    static const uint8_t images[5] = {RO, RW, RO, RW, U};

    memset(cls, 0xff, sizeof(cls));
    ASSERT_EQ(shim_kernel_sig_classes(src, "add", 10, cls), 0);
    ASSERT(memcmp(cls, add, sizeof(add)) == 0);
    ASSERT_EQ(shim_kernel_sig_classes(src, "images", 5, cls), 0);
    ASSERT(memcmp(cls, images, sizeof(images)) == 0);
    ASSERT_EQ(shim_kernel_sig_classes(src, "none", 0, cls), 0);
    ASSERT_EQ(shim_kernel_sig_classes(src, "empty", 0, cls), 0);
    /* The declaration is passed over for the definition. */
    ASSERT_EQ(shim_kernel_sig_classes(src, "decl", 1, cls), 0);
    ASSERT_EQ(cls[0], RW);
}

TEST(kernel_sig_says_nothing_when_unsure)
{
    uint8_t cls[4];

    /* Preprocessor variants: which one is built is not known here. */
    ASSERT_EQ(shim_kernel_sig_classes(src, "twice", 1, cls), -ENOENT);
    /* Not the vendor's parameter count. */
    ASSERT_EQ(shim_kernel_sig_classes(src, "add", 9, cls), -ENOENT);
    /* Comments, strings, macros and unknown names. */
    ASSERT_EQ(shim_kernel_sig_classes(src, "commented", 1, cls), -ENOENT);
    ASSERT_EQ(shim_kernel_sig_classes(src, "also_commented", 1, cls),
              -ENOENT);
    ASSERT_EQ(shim_kernel_sig_classes(src, "fake", 1, cls), -ENOENT);
    ASSERT_EQ(shim_kernel_sig_classes(src, "hidden", 1, cls), -ENOENT);
    ASSERT_EQ(shim_kernel_sig_classes(src, "missing", 1, cls), -ENOENT);
    ASSERT_EQ(shim_kernel_sig_classes(NULL, "add", 1, cls), -ENOENT);
    /* Truncated sources end cleanly. */
    ASSERT_EQ(shim_kernel_sig_classes("kernel void t(__global int *a",
                                      "t", 1, cls),
              -ENOENT);
    ASSERT_EQ(shim_kernel_sig_classes("kernel void t(", "t", 1, cls),
              -ENOENT);
    ASSERT_EQ(shim_kernel_sig_classes("/* open", "t", 1, cls), -ENOENT);
}
