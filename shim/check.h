/* OpenCL's rules for commands the remote backend batches (check.c), for
 * the files that check them before a call is batched. */
#ifndef CRANE_SHIM_CHECK_H
#define CRANE_SHIM_CHECK_H

#include "shim.h"

/* Each returns CL_SUCCESS or the error OpenCL names for the call.  The
 * rules on objects, sizes and wait lists are checked only for a queue on
 * the remote backend (the vendor judges them itself in passthrough); the
 * transfers' checks end with shim_mem_host_check's. */

cl_int shim_check_wait_context(const struct shim_queue *q, cl_uint n,
                               const cl_event *events);
/* A command with no object of its own (a marker, a barrier). */
cl_int shim_check_wait_list(cl_command_queue queue, cl_uint n,
                            const cl_event *events);
cl_int shim_check_buffer_io(cl_command_queue queue, cl_mem buffer,
                            size_t offset, size_t size, const void *ptr,
                            cl_uint n, const cl_event *events,
                            cl_map_flags access);
/* The rectangle's pitches as OpenCL defines them (0: packed). */
cl_int shim_check_buffer_rect_io(
    cl_command_queue queue, cl_mem buffer, const size_t *buffer_origin,
    const size_t *host_origin, const size_t *region, size_t buffer_row,
    size_t buffer_slice, size_t host_row, size_t host_slice, const void *ptr,
    cl_uint n, const cl_event *events, cl_map_flags access);
cl_int shim_check_fill_buffer(cl_command_queue queue, cl_mem buffer,
                              const void *pattern, size_t pattern_size,
                              size_t offset, size_t size, cl_uint n,
                              const cl_event *events);
cl_int shim_check_copy_buffer(cl_command_queue queue, cl_mem src_buffer,
                              cl_mem dst_buffer, size_t src_offset,
                              size_t dst_offset, size_t size, cl_uint n,
                              const cl_event *events);
cl_int shim_check_image_io(cl_command_queue queue, cl_mem image,
                           const size_t *origin, const size_t *region,
                           const void *ptr, cl_uint n, const cl_event *events,
                           cl_map_flags access);
cl_int shim_check_fill_image(cl_command_queue queue, cl_mem image,
                             const void *color, const size_t *origin,
                             const size_t *region, cl_uint n,
                             const cl_event *events);
/* A new buffer of SIZE bytes in C: CL_INVALID_BUFFER_SIZE above every
 * device's CL_DEVICE_MAX_MEM_ALLOC_SIZE (the remote backend's devices:
 * asked once, the proxy backend's device_max_alloc hook). */
cl_int shim_check_buffer_size(const struct shim_context *c, size_t size);
cl_int shim_check_copy_buffer_rect(
    cl_command_queue queue, cl_mem src_buffer, cl_mem dst_buffer,
    const size_t *src_origin, const size_t *dst_origin, const size_t *region,
    size_t src_row, size_t src_slice, size_t dst_row, size_t dst_slice,
    cl_uint n, const cl_event *events);
cl_int shim_check_copy_image(cl_command_queue queue, cl_mem src_image,
                             cl_mem dst_image, const size_t *src_origin,
                             const size_t *dst_origin, const size_t *region,
                             cl_uint n, const cl_event *events);
/* Between IMAGE's box and BUFFER from OFFSET, either way. */
cl_int shim_check_copy_image_buffer(cl_command_queue queue, cl_mem image,
                                    cl_mem buffer, const size_t *origin,
                                    const size_t *region, size_t offset,
                                    cl_uint n, const cl_event *events);
/* A map of a buffer (OFFSET, SIZE) or an image (ORIGIN, REGION). */
cl_int shim_check_map(cl_command_queue queue, cl_mem mem, bool image,
                      size_t offset, size_t size, const size_t *origin,
                      const size_t *region, cl_uint n,
                      const cl_event *events, cl_map_flags flags);
/* A launch: a kernel of the queue's context with every argument set. */
cl_int shim_check_launch(cl_command_queue queue, cl_kernel kernel,
                         cl_uint n, const cl_event *events);
/* A launch's work sizes against the kernel's reqd_work_group_size and the
 * device's uniform work-groups, where the vendor would refuse them at once
 * (remoted, a launch gets no reply of its own). */
cl_int shim_check_ndrange(cl_command_queue queue, cl_kernel kernel,
                          cl_uint dim, const size_t *global,
                          const size_t *local);
cl_int shim_check_migrate(cl_command_queue queue, cl_uint n_objects,
                          const cl_mem *objects, cl_mem_migration_flags flags,
                          cl_uint n, const cl_event *events);

#endif /* CRANE_SHIM_CHECK_H */
