/* Shared-memory rings for bulk bytes (proto/shm.h has the layout and the
 * rules for untrusted peers). */
#include "shm.h"

#include "pcopy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OFF_MAGIC 0
#define OFF_VERSION 4
#define OFF_RING_LEN 8
#define OFF_CONSUMED(ring) (64 + 64 * (ring))
#define PAGE 4096u

static _Atomic uint64_t *consumed(const struct crn_shm *s, int ring)
{
    return (_Atomic uint64_t *)(s->base + OFF_CONSUMED(ring));
}

size_t crn_shm_size(size_t ring_len)
{
    return CRN_SHM_HEADER + 2 * ring_len;
}

static void write_header(struct crn_shm *s)
{
    uint32_t magic = CRN_SHM_MAGIC, version = CRN_SHM_VERSION;
    uint64_t len = s->ring_len;

    memcpy(s->base + OFF_MAGIC, &magic, 4);
    memcpy(s->base + OFF_VERSION, &version, 4);
    memcpy(s->base + OFF_RING_LEN, &len, 8);
    atomic_store(consumed(s, 0), 0);
    atomic_store(consumed(s, 1), 0);
    memset(s->base + CRN_SHM_OFF_TOKEN, 0, CRN_SHM_TOKEN_LEN);
}

static bool layout_ok(uint64_t size, uint64_t ring_len)
{
    return ring_len >= CRN_SHM_MIN_RING && ring_len % PAGE == 0 &&
           size <= CRN_SHM_MAX_SIZE && ring_len <= CRN_SHM_MAX_SIZE / 2 &&
           size == crn_shm_size(ring_len);
}

static int map(struct crn_shm *s, int fd, size_t size, size_t ring_len,
               uint64_t offset)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                   (off_t)offset);

    if (p == MAP_FAILED)
        return -errno;
    memset(s, 0, sizeof(*s));
    s->base = p;
    s->size = size;
    s->ring_len = ring_len;
    s->fd = fd;
    return 0;
}

int crn_shm_create(size_t ring_len, struct crn_shm *out)
{
    int fd, rc;

    ring_len = (ring_len + PAGE - 1) / PAGE * PAGE;
    if (!layout_ok(crn_shm_size(ring_len), ring_len))
        return -EINVAL;
    fd = memfd_create("crane-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, (off_t)crn_shm_size(ring_len)) < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) <
            0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    if ((rc = map(out, fd, crn_shm_size(ring_len), ring_len, 0)) < 0) {
        close(fd);
        return rc;
    }
    write_header(out);
    return 0;
}

int crn_shm_create_plain(size_t size, struct crn_shm *out)
{
    int fd, rc;

    size = (size + PAGE - 1) / PAGE * PAGE;
    if (size == 0 || size > CRN_SHM_MAX_HOST)
        return -EINVAL;
    fd = memfd_create("crane-host", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, (off_t)size) < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) <
            0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    if ((rc = map(out, fd, size, 0, 0)) < 0)
        close(fd);
    return rc;
}

int crn_shm_map_plain(int fd, uint64_t size, struct crn_shm *out)
{
    struct stat st;
    int seals, rc = -EINVAL;

    if (size == 0 || size % PAGE || size > CRN_SHM_MAX_HOST)
        goto fail;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < size)
        goto fail;
    /* A peer that could shrink it would make our accesses (and the
     * device's) fault. */
    seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
        rc = -EPERM;
        goto fail;
    }
    if ((rc = map(out, fd, (size_t)size, 0, 0)) == 0)
        return 0;
fail:
    close(fd);
    return rc;
}

int crn_shm_map_fd(int fd, uint64_t size, uint64_t ring_len, bool need_seals,
                   struct crn_shm *out)
{
    struct stat st;
    int rc = -EINVAL;

    if (!layout_ok(size, ring_len))
        goto fail;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < size)
        goto fail;
    if (need_seals) {
        int seals = fcntl(fd, F_GET_SEALS);
        if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
            rc = -EPERM;
            goto fail;
        }
    }
    if ((rc = map(out, fd, (size_t)size, (size_t)ring_len, 0)) < 0)
        goto fail;
    /* The peer wrote the header; only its CONSUMED fields matter to us,
     * and they start where our own positions do. */
    out->expect[0] = out->expect[1] = 0;
    out->released[0] = out->released[1] = 0;
    out->head[0] = out->head[1] = 0;
    return 0;
fail:
    close(fd);
    return rc;
}

int crn_shm_map_file(const char *path, size_t ring_len, struct crn_shm *out)
{
    return crn_shm_map_file_at(path, 0, 0, ring_len, out);
}

int crn_shm_map_file_at(const char *path, uint64_t offset, uint64_t limit,
                        size_t ring_len, struct crn_shm *out)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct stat st;
    uint64_t have_len = 0, room;
    uint32_t magic = 0;
    int rc;

    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto fail;
    }
    /* The part of the file the area may use: from OFFSET, LIMIT bytes. */
    rc = -EINVAL;
    if (offset % PAGE || offset > CRN_SHM_MAX_SIZE * 64 ||
        (uint64_t)st.st_size <= offset)
        goto fail;
    room = (uint64_t)st.st_size - offset;
    if (limit && limit < room)
        room = limit;
    if (ring_len) {
        /* A fresh layout: as large as the room allows, at most RING_LEN. */
        rc = -ENOSPC;
        if (room < crn_shm_size(CRN_SHM_MIN_RING))
            goto fail;
        if (room > CRN_SHM_MAX_SIZE)
            room = CRN_SHM_MAX_SIZE;
        size_t fits = ((size_t)room - CRN_SHM_HEADER) / 2 / PAGE * PAGE;
        if (ring_len > fits)
            ring_len = fits;
        ring_len = ring_len / PAGE * PAGE;
        if (!layout_ok(crn_shm_size(ring_len), ring_len) ||
            (rc = map(out, fd, crn_shm_size(ring_len), ring_len, offset)) < 0)
            goto fail;
        write_header(out);
        return 0;
    }
    /* An existing layout: read its header through a one-page mapping
     * (an ivshmem BAR's resource file can be mapped, not read). */
    rc = -EINVAL;
    if (room < CRN_SHM_HEADER)
        goto fail;
    unsigned char *h = mmap(NULL, CRN_SHM_HEADER, PROT_READ, MAP_SHARED, fd,
                            (off_t)offset);
    if (h == MAP_FAILED) {
        rc = -errno;
        goto fail;
    }
    memcpy(&magic, h + OFF_MAGIC, 4);
    memcpy(&have_len, h + OFF_RING_LEN, 8);
    munmap(h, CRN_SHM_HEADER);
    if (magic != CRN_SHM_MAGIC || !layout_ok(crn_shm_size(have_len), have_len) ||
        crn_shm_size(have_len) > room)
        goto fail;
    if ((rc = map(out, fd, crn_shm_size(have_len), have_len, offset)) < 0)
        goto fail;
    /* Positions continue from what the header says was consumed. */
    for (int r = 0; r < 2; r++)
        out->head[r] = out->expect[r] = out->released[r] =
            atomic_load(consumed(out, r));
    return 0;
fail:
    close(fd);
    return rc;
}

int crn_shm_token_new(struct crn_shm *s, uint8_t token[CRN_SHM_TOKEN_LEN])
{
    static const uint8_t zero[CRN_SHM_TOKEN_LEN];

    do {
        if (getrandom(token, CRN_SHM_TOKEN_LEN, 0) !=
            (ssize_t)CRN_SHM_TOKEN_LEN)
            return -EIO;
    } while (memcmp(token, zero, CRN_SHM_TOKEN_LEN) == 0);
    memcpy(s->base + CRN_SHM_OFF_TOKEN, token, CRN_SHM_TOKEN_LEN);
    return 0;
}

bool crn_shm_token_is(const struct crn_shm *s, const uint8_t *token,
                      size_t len)
{
    static const uint8_t zero[CRN_SHM_TOKEN_LEN];
    uint8_t have[CRN_SHM_TOKEN_LEN];

    if (len != CRN_SHM_TOKEN_LEN || memcmp(token, zero, len) == 0)
        return false;
    /* One copy out of the shared page, then compared privately. */
    memcpy(have, s->base + CRN_SHM_OFF_TOKEN, sizeof(have));
    return memcmp(have, token, len) == 0;
}

void crn_shm_close(struct crn_shm *s)
{
    if (s->base)
        munmap(s->base, s->size);
    if (s->fd >= 0)
        close(s->fd);
    s->base = NULL;
    s->fd = -1;
}

unsigned char *crn_shm_at(const struct crn_shm *s, enum crn_shm_ring ring,
                          uint64_t pos)
{
    return s->base + CRN_SHM_HEADER + (size_t)ring * s->ring_len +
           (size_t)(pos % s->ring_len);
}

int crn_shm_reserve(struct crn_shm *s, enum crn_shm_ring ring, size_t len,
                    uint64_t *pos)
{
    uint64_t L = s->ring_len, head = s->head[ring];
    uint64_t done = atomic_load_explicit(consumed(s, ring),
                                         memory_order_acquire);
    uint64_t start = head;

    if (len == 0 || len > L)
        return -EMSGSIZE;
    if (done > head || head - done > L)
        return -EPROTO;
    if (head % L + len > L)
        start = head + (L - head % L);  /* skip the ring's tail end */
    if (start + len - done > L)
        return -EAGAIN;
    s->head[ring] = start + len;
    *pos = start;
    return 0;
}

int crn_shm_reserve_wait(struct crn_shm *s, enum crn_shm_ring ring,
                         size_t len, long timeout_ms, uint64_t *pos)
{
    struct timespec t0, now, nap = {0, 2000};
    int rc = crn_shm_reserve(s, ring, len, pos);
    unsigned spins = 0;

    if (rc != -EAGAIN || timeout_ms <= 0)
        return rc;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        /* A short spin first: the consumer copies out at memory speed. */
        if (++spins > 64)
            nanosleep(&nap, NULL);
        else
            __builtin_ia32_pause();
        if ((rc = crn_shm_reserve(s, ring, len, pos)) != -EAGAIN)
            return rc;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000 +
                (now.tv_nsec - t0.tv_nsec) / 1000000 >=
            timeout_ms)
            return -EAGAIN;
    }
}

int crn_shm_claim(struct crn_shm *s, enum crn_shm_ring ring, uint64_t pos,
                  uint64_t len, unsigned char **at)
{
    uint64_t L = s->ring_len, from = s->expect[ring];
    uint64_t freed = __atomic_load_n(&s->released[ring], __ATOMIC_ACQUIRE);

    /* POS and LEN came from the stream, a private copy: checked once.  The
     * producer cannot have written past one ring length beyond what we
     * freed, nor before what we have claimed already. */
    if (len == 0 || len > L || pos < from || pos - freed >= L ||
        pos + len - freed > L || pos % L + len > L)
        return -EPROTO;
    s->expect[ring] = pos + len;
    *at = crn_shm_at(s, ring, pos);
    return 0;
}

void crn_shm_release(struct crn_shm *s, enum crn_shm_ring ring, uint64_t end)
{
    uint64_t freed = __atomic_load_n(&s->released[ring], __ATOMIC_RELAXED);

    /* EXPECT is the claiming thread's: a release never runs ahead of a
     * claim it follows, so END is checked against what it released. */
    if (end <= freed || end - freed > s->ring_len)
        return;
    __atomic_store_n(&s->released[ring], end, __ATOMIC_RELEASE);
    atomic_store_explicit(consumed(s, ring), end, memory_order_release);
}

int crn_shm_take(struct crn_shm *s, enum crn_shm_ring ring, uint64_t pos,
                 uint64_t len, void *dst)
{
    unsigned char *at;
    int rc = crn_shm_claim(s, ring, pos, len, &at);

    if (rc < 0)
        return rc;
    if (dst)
        crn_pcopy(dst, at, (size_t)len);
    crn_shm_release(s, ring, pos + len);
    return 0;
}
