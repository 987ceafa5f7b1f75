"""A pyopencl program that runs until told to stop and checks every result.

The third-party OpenCL program of the live end-to-end test (Debian's
python3-pyopencl and numpy, unmodified; pyopencl's extension reaches
libOpenCL through RTLD_LOCAL, which the shim must handle): a 32-bit integer
stencil over WORDS words, one kernel launch per iteration, every iteration
computed again by numpy on the CPU, and the device's buffer read back and
compared byte for byte every CHECK iterations and at the end.  Integer
arithmetic wraps the same on every device, so any difference is a fault.

  cl_pyworker.py [--seconds N] [--words N] [--check N]
                 [--progress FILE] [--stop-file FILE]

It stops after --seconds, or as soon as the stop file exists.  The progress
file holds "ITERATIONS SECONDS" after every iteration (written whole, then
renamed).  Last line on stdout: "PASS cl_pyworker iterations=N sha256=H"
(exit 0), "FAIL cl_pyworker mismatch at iteration N word I ..." (exit 1), or
"ERROR cl_pyworker at iteration N: REASON" when OpenCL fails (exit 2):
an error, never a wrong result.
"""
import argparse
import hashlib
import os
import sys
import time

import numpy as np
import pyopencl as cl

SOURCE = """
__kernel void advance(__global const uint *a, __global uint *b, uint it)
{
    size_t i = get_global_id(0), n = get_global_size(0);
    uint l = a[(i + n - 1) % n], r = a[(i + 1) % n];
    b[i] = ((a[i] * 1664525u + l) ^ (r >> 3)) + it;
}
"""


def model_step(a, it):
    """The kernel on the CPU: uint32 arithmetic wraps as in OpenCL C."""
    with np.errstate(over="ignore"):
        left = np.roll(a, 1)
        right = np.roll(a, -1)
        return ((a * np.uint32(1664525) + left) ^ (right >> np.uint32(3))) \
            + np.uint32(it & 0xffffffff)


def write_progress(path, iterations, seconds):
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %.3f\n" % (iterations, seconds))
    os.rename(tmp, path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--words", type=int, default=65536)
    p.add_argument("--check", type=int, default=25)
    p.add_argument("--progress", default="")
    p.add_argument("--stop-file", default="")
    o = p.parse_args()

    it = 0
    try:
        ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
        queue = cl.CommandQueue(ctx)
        prog = cl.Program(ctx, SOURCE).build()
        knl = cl.Kernel(prog, "advance")
        host = (np.arange(o.words, dtype=np.uint32) * np.uint32(2654435761)) \
            ^ np.uint32(0x5bd1e995)
        mf = cl.mem_flags
        bufs = [cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host),
                cl.Buffer(ctx, mf.READ_WRITE, host.nbytes)]
        got = np.empty_like(host)
        t0 = time.monotonic()
        while True:
            stop = (time.monotonic() - t0 >= o.seconds or
                    (o.stop_file and os.path.exists(o.stop_file)))
            if it % o.check == 0 or stop:
                cl.enqueue_copy(queue, got, bufs[0])
                queue.finish()
                if not np.array_equal(got, host):
                    bad = int(np.nonzero(got != host)[0][0])
                    print("FAIL cl_pyworker mismatch at iteration %d word %d:"
                          " device %d, CPU %d" % (it, bad, got[bad],
                                                  host[bad]), flush=True)
                    return 1
            if stop:
                break
            knl.set_args(bufs[0], bufs[1], np.uint32(it & 0xffffffff))
            cl.enqueue_nd_range_kernel(queue, knl, (o.words,), None)
            host = model_step(host, it)
            bufs.reverse()
            it += 1
            if it % 5 == 0:
                queue.finish()
                write_progress(o.progress, it, time.monotonic() - t0)
        queue.finish()
        write_progress(o.progress, it, time.monotonic() - t0)
    except cl.Error as e:
        print("ERROR cl_pyworker at iteration %d: %s" % (it, e), flush=True)
        return 2
    print("PASS cl_pyworker iterations=%d sha256=%s" %
          (it, hashlib.sha256(host.tobytes()).hexdigest()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
