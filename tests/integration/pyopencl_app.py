# A pyopencl program: reaches libOpenCL from a Python extension module loaded
# with RTLD_LOCAL, the path LD_PRELOAD interposition alone cannot see.
import hashlib
import sys

import numpy as np
import pyopencl as cl

ctx = cl.Context(cl.get_platforms()[0].get_devices())
queue = cl.CommandQueue(ctx)
prog = cl.Program(ctx, """
__kernel void advance(__global const float *a, __global float *b, float k) {
    int i = get_global_id(0);
    b[i] = a[i] * k + (float)(i % 7);
}
""").build()
n = 1 << 16
a = np.arange(n, dtype=np.float32)
mf = cl.mem_flags
da = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a)
db = cl.Buffer(ctx, mf.READ_WRITE, a.nbytes)
for it in range(int(sys.argv[1]) if len(sys.argv) > 1 else 200):
    prog.advance(queue, (n,), None, da, db, np.float32(0.5))
    prog.advance(queue, (n,), None, db, da, np.float32(2.0))
out = np.empty_like(a)
cl.enqueue_copy(queue, out, da)
queue.finish()
print(hashlib.sha256(out.tobytes()).hexdigest())
