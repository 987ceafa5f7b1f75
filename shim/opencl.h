/* The OpenCL headers as every file of the shim includes them: version 3.0
 * with every deprecated entry point, which the shim exports too. */
#ifndef CRANE_SHIM_OPENCL_H
#define CRANE_SHIM_OPENCL_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#define CL_USE_DEPRECATED_OPENCL_2_1_APIS
#define CL_USE_DEPRECATED_OPENCL_2_2_APIS
#include <CL/cl.h>

#endif /* CRANE_SHIM_OPENCL_H */
