# bench/remote: remoting benchmarks (latency, switch), plain OpenCL programs
# like clbench; switch also needs -ldl to find crane_rehome with dlsym.
# Included before `all`, so it names no target without a recipe: the top
# Makefile's `bench` target lists these binaries.

build/bench/latency: bench/remote/latency.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror $< -o $@ \
	    -lOpenCL

build/bench/switch: bench/remote/switch.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror $< -o $@ \
	    -lOpenCL -ldl -pthread

build/bench/sockbw: bench/remote/sockbw.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror $< -o $@ -pthread

build/bench/hostptr: bench/remote/hostptr.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror $< -o $@ \
	    -lOpenCL

build/bench/pcopybw: bench/remote/pcopybw.c proto/pcopy.c proto/pcopy.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I. \
	    bench/remote/pcopybw.c proto/pcopy.c -o $@ -lOpenCL -pthread

build/bench/userevent: bench/remote/userevent.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror $< -o $@ \
	    -lOpenCL -pthread
