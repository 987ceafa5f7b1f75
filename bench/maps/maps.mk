# bench/maps: a program keeping its staging buffer mapped, switched
# (bench/maps/README.md).  Included by the top Makefile, whose `bench`
# target lists it.

build/bench/maps: bench/maps/maps.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror $< -o $@ \
	    -lOpenCL
