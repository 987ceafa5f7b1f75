/* A switch: its entry points and times, and what it uses to move the
 * program's state besides the store:
 * prewarm, pinned staging, host copies, pre-copy, kept binaries and the
 * rebuild of memory objects and kernel arguments.  Part of shim.h (include
 * that): it needs the shadows' types declared before it there. */
#ifndef CRANE_SHIM_SWITCH_H
#define CRANE_SHIM_SWITCH_H

#include "bytepath.h"

struct shim_backend_ops;
/* Before a switch from the proxy back to the vendor: load the vendor
 * (VENDOR: the native backend's row, which names this) and make the
 * contexts while the program still runs (prewarm.c). */
void shim_prewarm_native(const struct shim_backend_ops *vendor);
/* Before a switch to the proxy: contexts made there ahead, as twins
 * (prewarm.c); the same on a plan and connection already had, giving how
 * many were made; the device PLAN puts shadow D on (NULL: a sub-device). */
struct shim_plan;
void shim_prewarm_remote_contexts(void);
unsigned shim_prewarm_remote_contexts_on(const struct shim_plan *plan,
                                         unsigned long conn);
cl_device_id shim_plan_device(const struct shim_device *d,
                              const struct shim_plan *plan);
/* Before a switch to the proxy, the gate still open: twins made there
 * for every context, queue, sampler, program and kernel that has none
 * (prebuild.c); how many into T (prebuilt, prebuild). */
struct shim_rehome_times;
void shim_prebuild_remote(struct shim_rehome_times *t);

/* Pinned staging for a switch's copies into and out of the vendor
 * (staging.c): chunks made per vendor context before the gate closes,
 * copies queued chunk by chunk, done only once finish returned 0. */
int shim_staging_prepare(void *ctx);
bool shim_staging_has(void *ctx);
int shim_staging_read(cl_command_queue q, void *ctx, cl_mem mem, size_t off,
                      size_t len, void *dst);
int shim_staging_write(cl_command_queue q, void *ctx, cl_mem mem, size_t off,
                       size_t len, const void *src);
/* The same for a buffer the host may not read or write (hostcopy.c). */
int shim_staging_read_via_device(cl_command_queue q, void *ctx, cl_mem mem,
                                 size_t off, size_t len, void *dst);
int shim_staging_write_via_device(cl_command_queue q, void *ctx, cl_mem mem,
                                  size_t off, size_t len, const void *src);
int shim_staging_finish(void);
/* Called by shim_copies_drop_all. */
void shim_staging_drop_all(void);
/* A read whose chunks go straight from the pinned chunk to SINK (the
 * proxy, on a switch's way out), without a RAM copy. */
typedef int (*shim_staging_sink)(void *arg, size_t off, const void *p,
                                 size_t len);
int shim_staging_stream(cl_command_queue q, void *ctx, cl_mem mem, size_t off,
                        size_t len, shim_staging_sink sink, void *arg);
/* Where a switch's staged copies spent their time: the switch thread
 * waiting for the device's chunk copies, and copying between the pinned
 * chunks and RAM (taken, then zeroed, per phase by rehome.c). */
struct shim_staging_stats {
    double device_s, copy_s;
    size_t bytes;
};
void shim_staging_stats_take(struct shim_staging_stats *out);
/* A switch's streamed buffers moved between the native device and a proxy
 * on this host through the shared area, pinned for the native vendor too:
 * no CPU copy (ringstream.c).  The area wrapped for the vendor context CTX
 * before the gate closes (0, or -errno: not available, copies go through
 * staging); whether CTX has it; every wrap released (by
 * shim_copies_drop_all).  Out: [OFF, OFF+LEN) of the native buffer NMEM
 * (queue NQ, context NCTX) to the same range of the proxy's RMEM (queue
 * RQ), done once RQ finished
 * (-EAGAIN before anything moved: the area is no longer the one wrapped,
 * use the pinned chunks).  Back: that range of the proxy's RMEM to NMEM,
 * done when it returns 0.  0, or -errno, logged. */
int shim_ringstream_prepare(void *ctx);
bool shim_ringstream_has(void *ctx);
void shim_ringstream_drop_all(void);
int shim_ringstream_out(cl_command_queue nq, void *nctx, cl_mem nmem,
                        size_t off, size_t len, cl_command_queue rq,
                        cl_mem rmem);
int shim_ringstream_back(cl_command_queue rq, cl_mem rmem, size_t off,
                         size_t len, cl_command_queue nq, cl_mem nmem);
/* What moved that way since the last take: bytes, and the time the switch
 * waited for the native device's copies of them. */
struct shim_ring_stats {
    size_t bytes;
    double device_s;
};
void shim_ring_stats_take(struct shim_ring_stats *out);

/* A buffer's N bytes at OFF of M's real MEM (in the vendor context CTX)
 * read into DST or written from SRC on Q by the path the one chooser
 * picks (bytepath.h; bytes.c): a device copy where host access is
 * forbidden, pinned chunks, or the vendor's call.  0 once queued; -EIO
 * with the vendor's error in *ERR where its call failed, or hostcopy's
 * -errno.  INTO_SHADOW: DST is the shim's RAM copy; FROM_PROXY: a large
 * read is blocking. */
enum shim_path shim_bytes_path(enum shim_move move, void *ctx,
                               const struct shim_mem *m, cl_mem mem,
                               size_t n, bool into_shadow, bool from_proxy);
int shim_bytes_read(cl_command_queue q, void *ctx, const struct shim_mem *m,
                    cl_mem mem, size_t off, size_t n, void *dst,
                    bool into_shadow, bool from_proxy, cl_int *err);
int shim_bytes_write(cl_command_queue q, void *ctx, const struct shim_mem *m,
                     cl_mem mem, size_t off, size_t n, const void *src,
                     cl_int *err);

/* Bytes of memory objects whose host access flags (CL_MEM_HOST_*) forbid
 * the host's reads or writes, moved through the device (hostcopy.c).
 * Queued on Q, an in-order queue of the vendor context CTX; done once Q
 * finished (and shim_staging_finish() returned 0).  0, or -errno, logged. */
int shim_hostcopy_read(cl_command_queue q, void *ctx, cl_mem mem, size_t off,
                       size_t len, void *dst);
int shim_hostcopy_write(cl_command_queue q, void *ctx, cl_mem mem,
                        size_t off, size_t len, const void *src);
/* A whole image (M's shape) into DST with host pitches ROW_STEP (between
 * rows, or layers of a 1D array) and SLICE_STEP; from packed SRC. */
int shim_hostcopy_read_image(cl_command_queue q, void *ctx,
                             const struct shim_mem *m, cl_mem mem, void *dst,
                             size_t row_step, size_t slice_step);
int shim_hostcopy_write_image(cl_command_queue q, void *ctx,
                              const struct shim_mem *m, cl_mem mem,
                              const void *src);
/* For a program's map (map.c): the read through a bounce buffer of its
 * own, the first copy waiting on WAIT, *LAST the final command's event. */
cl_int shim_hostcopy_read_events(cl_command_queue q, void *ctx, cl_mem mem,
                                 size_t off, size_t len, void *dst,
                                 cl_uint n_wait, const cl_event *wait,
                                 cl_event *last);
/* The same for the box ORIGIN, REGION of an image, LEN bytes packed. */
cl_int shim_hostcopy_read_image_events(cl_command_queue q, void *ctx,
                                       cl_mem mem, const size_t *origin,
                                       const size_t *region, size_t len,
                                       void *dst, cl_uint n_wait,
                                       const cl_event *wait, cl_event *last);
/* Every bounce buffer here and staging chunk (staging.c) released: after
 * the gate opens, or before their vendor is unloaded. */
void shim_copies_drop_all(void);
/* RAM copies made and faulted in before the gate closes (staging.c). */
void shim_staging_prepare_shadows(bool (*needed)(const struct shim_mem *m,
                                                 void *arg),
                                  void *arg);

/* Pre-copy (precopy.c): rounds of copying device-dirty bytes into the RAM
 * copies while the program runs, before a switch closes the gate; the
 * report line's precopy fields. */
/* Objects made ahead that a switch did not adopt, released. */
void shim_precopy_drop_targets(void);
/* M's object made ahead, if it still exists (not gone with a connection
 * to the proxy since), and let go of it; NULL if none. */
void *shim_precopy_take_target(struct shim_mem *m);
void shim_precopy_forget(void);
void shim_precopy_describe(char *buf, size_t len);

/* Kept binaries of programs built or compiled from source or IL, and of
 * linked ones (program_cache.c). */
/* After a build, compile or link: binaries are due (fetched by the next
 * switch). */
void shim_program_cache_mark(struct shim_program *p);
/* Fetches the due binaries; by a switch, before it closes the gate. */
void shim_program_cache_prepare(void);
/* Whether P has kept binaries now (read under their lock). */
bool shim_program_cache_has(struct shim_program *p);
/* P's real program made (and built, if an executable) from its kept
 * binaries on the backend now in use; false if none fit. */
bool shim_program_cache_realize(struct shim_program *p);
/* P made from its kept binaries in context CTX of another backend
 * (devices placed by PLAN), if they are for the same device models there;
 * else NULL (prebuild.c, the program running). */
void *shim_program_cache_twin(struct shim_program *p, void *ctx,
                              const struct shim_plan *plan);
/* Counted by a program's realize: made from binaries (KEPT) or compiled
 * or linked; taken (and zeroed) by a switch for its report. */
void shim_program_cache_count(bool kept);
void shim_program_cache_counts_take(unsigned *kept, unsigned *compiled);
/* The options a program is built with (its own, and what the shim adds),
 * malloc()ed; NULL when out of memory (program_cache.c). */
char *shim_program_build_options(const char *options);
void shim_program_cache_free(struct shim_program *p);
/* CL_PROGRAM_BINARY_SIZES or CL_PROGRAM_BINARIES answered from the
 * binaries the shim holds for P's build (kept, or taken now from the
 * vendor), the same before and after any switch; false where it holds
 * none (unbuilt: the vendor answers), *ERR set otherwise. */
bool shim_program_cache_answer(struct shim_program *p, cl_program_info param,
                               size_t size, void *value, size_t *size_ret,
                               cl_int *err);

void *shim_mem_make_in(struct shim_mem *m, void *ctx, cl_int *err);
int shim_kernel_reset_args(struct shim_kernel *k);
/* --- re-home (rehome.c) -------------------------------------------------- */

struct shim_rehome_times {
    double block, finish, extract, release, unload, load, rebuild, reinject,
        total;
    size_t bytes_extracted, bytes_reinjected;
    size_t bytes_streamed;       /* of those, device -> proxy directly */
    unsigned objects;
    /* Inside extract and reinject: the vendor side's staged copies
     * (device waits, CPU copies between pinned chunks and RAM), and the
     * proxy side's bulk bytes as the shim moved them (ring or stream). */
    struct shim_staging_stats extract_staged, reinject_staged;
    struct shim_bulk extract_ship, reinject_ship;
    /* Of the streamed bytes, those moved between the vendor's device and
     * the shared area with no CPU copy, and the device's time for them
     * (ringstream.c). */
    struct shim_ring_stats ring;
    const char *transport;       /* the proxy's bulk path, if it was one */
    /* Objects the rebuild took from twins on the proxy (rehome_in.c);
     * of them, made ahead by this switch before the gate closed, and the
     * time that took (prebuild.c, not stoppage). */
    unsigned twins, prebuilt;
    double prebuild;
    /* Programs the rebuild made from binaries (kept, or the program's
     * own) and those it compiled or linked again (rehome_in.c). */
    unsigned programs_kept, programs_compiled;
};

int shim_rehome(struct shim_rehome_times *t);
/* A re-home onto another backend: passthrough <-> remoting. */
int shim_switch(const struct shim_backend_ops *to,
                struct shim_rehome_times *t);
/* The same, for a migration: the GPU leaves after it (shim.gpu_leaves). */
int shim_switch_gpu_leaves(const struct shim_backend_ops *to,
                           struct shim_rehome_times *t);
/* Stop-and-copy: state to RAM, vendor unloaded, the program's calls held
 * until shim_unpark() brings everything back.  0 or -errno. */
int shim_park(struct shim_rehome_times *t);
/* Why the last switch failed, in words ("" if it did not or none said). */
const char *shim_rehome_reason(void);
/* A switch refused before anything changed (rehome_common.c): every
 * refusal in the shim comes here, so that each is one "SWITCH_REFUSE"
 * line in the log with its reason, kept as the switch's reason for its
 * report line and cranectl.  Returns RC. */
int shim_switch_refuse(int rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int shim_unpark(struct shim_rehome_times *t);

#endif /* CRANE_SHIM_SWITCH_H */
