/* The sizes of an image's bytes: an element, the region, a packed row. */
#include "mem_int.h"

size_t shim_image_elem_size(const cl_image_format *f)
{
    size_t channels, bytes;

    switch (f->image_channel_order) {
    case CL_R: case CL_A: case CL_INTENSITY: case CL_LUMINANCE:
    case CL_DEPTH: case CL_Rx:
        channels = 1; break;
    case CL_RG: case CL_RA: case CL_RGx: case CL_DEPTH_STENCIL:
        channels = 2; break;
    case CL_RGB: case CL_RGBx:
        channels = 3; break;
    default:
        channels = 4; break;
    }
    switch (f->image_channel_data_type) {
    case CL_SNORM_INT8: case CL_UNORM_INT8: case CL_SIGNED_INT8:
    case CL_UNSIGNED_INT8:
        bytes = 1; break;
    case CL_SNORM_INT16: case CL_UNORM_INT16: case CL_SIGNED_INT16:
    case CL_UNSIGNED_INT16: case CL_HALF_FLOAT:
        bytes = 2; break;
    case CL_UNORM_SHORT_565: case CL_UNORM_SHORT_555:
        return 2;
    case CL_UNORM_INT_101010: case CL_UNORM_INT24:
        return 4;
    default:
        bytes = 4; break;
    }
    return channels * bytes;
}

/* The region covering a whole image, as read/write image calls want it. */
void shim_image_region(const struct shim_mem *m, size_t region[3])
{
    shim_image_desc_region(&m->desc, region);
}

void shim_image_desc_region(const cl_image_desc *d, size_t region[3])
{
    region[0] = d->image_width;
    region[1] = 1;
    region[2] = 1;
    switch (d->image_type) {
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
        region[1] = d->image_array_size;
        break;
    case CL_MEM_OBJECT_IMAGE2D:
        region[1] = d->image_height;
        break;
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
        region[1] = d->image_height;
        region[2] = d->image_array_size;
        break;
    case CL_MEM_OBJECT_IMAGE3D:
        region[1] = d->image_height;
        region[2] = d->image_depth;
        break;
    default:
        break;
    }
}

size_t shim_image_row_bytes(const struct shim_mem *m)
{
    return m->desc.image_width * shim_image_elem_size(&m->format);
}
