# bench/shimcost: the shim's own cost per call, against a null vendor.
# Included before `all`, like bench/remote/remote.mk; the top Makefile's
# `bench` target lists these.

build/bench/shimcost: bench/shimcost/shimcost.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror $< -o $@ \
	    -lOpenCL

# The null vendor and an .icd naming it by absolute path, for the system
# ICD loader (OCL_ICD_VENDORS=build/bench/nullcl).
build/bench/nullcl/libnullcl.so: bench/shimcost/nullcl.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared \
	    -fvisibility=hidden $< -o $@
	echo "$(abspath $@)" > $(dir $@)nullcl.icd
