/* The OpenCL headers as crane-proxy uses them: version 3.0, every API. */
#ifndef PX_CL_H
#define PX_CL_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl.h>

/* Ids the proxy chooses (platforms and devices it offers) have this bit
 * set; ids the client chooses never do. */
#define PX_PROXY_ID_BIT (UINT64_C(1) << 63)

#endif /* PX_CL_H */
