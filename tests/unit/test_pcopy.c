/* Unit tests of proto/pcopy.c: large copies spread over helper threads are
 * byte for byte memcpy, at odd sizes and alignments, from several callers
 * at once. */
#include "runner.h"

#include "proto/pcopy.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BIG ((9u << 20) + 4093u)

static void fill(uint8_t *p, size_t len, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

/* Sizes around the threshold and the part size, odd offsets on both
 * sides, both kinds of source; the bytes around the copy untouched. */
TEST(pcopy_matches_memcpy)
{
    uint8_t *src = malloc(BIG + 64), *dst = malloc(BIG + 64);
    const size_t sizes[] = {0, 1, 63, 4096, CRN_PCOPY_MIN - 1, CRN_PCOPY_MIN,
                            CRN_PCOPY_MIN + 17, (3u << 20) + 5, BIG};

    ASSERT(src && dst);
    fill(src, BIG + 64, 1);
    for (unsigned threads = 1; threads <= 4; threads += 3) {
        crn_pcopy_set_threads(threads);
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            for (unsigned off = 0; off < 3; off++) {
                size_t n = sizes[k];
                memset(dst, 0xa5, BIG + 64);
                if (off == 2)
                    crn_pcopy_from_pinned(dst + 7, src + off, n);
                else
                    crn_pcopy(dst + 7, src + off, n);
                ASSERT_MEM_EQ(dst + 7, src + off, n);
                ASSERT_EQ(dst[6], 0xa5);
                ASSERT_EQ(dst[7 + n], 0xa5);
            }
        }
    }
    crn_pcopy_set_threads(1);
    free(src);
    free(dst);
}

struct caller {
    uint8_t *src, *dst;
    int ok;
};

static void *call_many(void *arg)
{
    struct caller *c = arg;
    c->ok = 1;
    for (unsigned i = 0; i < 20; i++) {
        memset(c->dst, 0, BIG);
        crn_pcopy(c->dst, c->src, BIG - i * 4099);
        if (memcmp(c->dst, c->src, BIG - i * 4099) != 0)
            c->ok = 0;
    }
    return NULL;
}

/* Callers on several threads at once: one gets the helpers, the others
 * copy alone; every copy is whole. */
TEST(pcopy_concurrent_callers)
{
    struct caller c[3];
    pthread_t t[3];

    crn_pcopy_set_threads(3);
    for (int i = 0; i < 3; i++) {
        c[i].src = malloc(BIG);
        c[i].dst = malloc(BIG);
        ASSERT(c[i].src && c[i].dst);
        fill(c[i].src, BIG, (unsigned)i + 7);
        ASSERT_EQ(pthread_create(&t[i], NULL, call_many, &c[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        ASSERT_EQ(c[i].ok, 1);
        free(c[i].src);
        free(c[i].dst);
    }
    crn_pcopy_set_threads(1);
}
