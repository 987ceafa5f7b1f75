/* Unit tests of the one path chooser for bytes (shim/bytepath.c): each
 * move's path from size, transport and capabilities. */
#include "shim/bytepath.h"
#include "tests/unit/runner.h"

static enum shim_path choose(struct shim_path_ask a)
{
    return shim_path_choose(&a);
}

TEST(bytepath_device_and_host)
{
    /* Host access forbidden: through the device, whatever else holds. */
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_READ,
                                            .host_forbids = true,
                                            .staging = true,
                                            .into_shadow = true}),
              SHIM_PATH_DEVICE);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_WRITE,
                                            .image = true,
                                            .host_forbids = true}),
              SHIM_PATH_DEVICE);
    /* Images: the vendor's call, never pinned chunks. */
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_WRITE,
                                            .image = true,
                                            .staging = true}),
              SHIM_PATH_CALL);
    /* Pinned chunks: writes, and reads into the shim's own RAM copy. */
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_WRITE,
                                            .staging = true}),
              SHIM_PATH_STAGED);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_READ,
                                            .staging = true,
                                            .into_shadow = true}),
              SHIM_PATH_STAGED);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_READ,
                                            .staging = true}),
              SHIM_PATH_CALL);
    /* Large reads from the proxy block; smaller ones, and writes, not. */
    ASSERT_EQ(choose((struct shim_path_ask){
                  .move = SHIM_MOVE_READ, .from_proxy = true,
                  .len = SHIM_PATH_BLOCKING_MIN}),
              SHIM_PATH_CALL_BLOCKING);
    ASSERT_EQ(choose((struct shim_path_ask){
                  .move = SHIM_MOVE_READ, .from_proxy = true,
                  .len = SHIM_PATH_BLOCKING_MIN - 1}),
              SHIM_PATH_CALL);
    ASSERT_EQ(choose((struct shim_path_ask){
                  .move = SHIM_MOVE_WRITE, .from_proxy = true,
                  .len = SHIM_PATH_BLOCKING_MIN}),
              SHIM_PATH_CALL);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_BOUNCE,
                                            .staging = true}),
              SHIM_PATH_BOUNCE_STAGED);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_BOUNCE}),
              SHIM_PATH_BOUNCE);
}

TEST(bytepath_streams)
{
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_STREAM_OUT,
                                            .ring = true, .staging = true}),
              SHIM_PATH_RING);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_STREAM_OUT,
                                            .staging = true}),
              SHIM_PATH_STREAM);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_STREAM_OUT}),
              SHIM_PATH_NONE);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_STREAM_OUT,
                                            .ring = true,
                                            .host_forbids = true}),
              SHIM_PATH_NONE);
    /* Back from the proxy: only through the shared area. */
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_STREAM_BACK,
                                            .ring = true}),
              SHIM_PATH_RING);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_STREAM_BACK,
                                            .staging = true}),
              SHIM_PATH_NONE);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_STREAM_BACK,
                                            .ring = true,
                                            .host_forbids = true}),
              SHIM_PATH_NONE);
}

TEST(bytepath_remote_wire)
{
    size_t big = SHIM_PATH_LANE_MIN, small = SHIM_PATH_INLINE_MAX;

    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_SEND,
                                            .len = big, .lanes = true}),
              SHIM_PATH_LANES);
    /* A shared area takes everything, the lanes' big bytes too. */
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_SEND,
                                            .len = big, .lanes = true,
                                            .shm = true}),
              SHIM_PATH_SHM);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_SEND,
                                            .len = big - 1, .lanes = true}),
              SHIM_PATH_SOCKET);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_SEND,
                                            .len = small}),
              SHIM_PATH_INLINE);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_SEND,
                                            .len = small + 1}),
              SHIM_PATH_SOCKET);
    ASSERT_EQ(choose((struct shim_path_ask){.move = SHIM_MOVE_SEND,
                                            .len = 0, .shm = true}),
              SHIM_PATH_INLINE);
    ASSERT_STR_EQ(shim_path_name(SHIM_PATH_LANES), "lanes");
    ASSERT_STR_EQ(shim_path_name((enum shim_path)99), "?");
}
