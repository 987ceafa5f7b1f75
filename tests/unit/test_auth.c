/* Unit tests of proto/auth.c: HMAC-SHA256 (RFC 4231), random bytes, keys. */
#include "runner.h"

#include "proto/auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Turns the hex string HEX into bytes at OUT; returns how many. */
static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;

    while (hex[0] && hex[1]) {
        unsigned v;
        ASSERT(n < cap);
        ASSERT_EQ(sscanf(hex, "%2x", &v), 1);
        out[n++] = (uint8_t)v;
        hex += 2;
    }
    return n;
}

/* Checks HMAC-SHA256(KEY, DATA) against the hex MAC, compared over its
 * length (test case 5 gives only the first 128 bits). */
static void check_vector(const uint8_t *key, size_t key_len,
                         const uint8_t *data, size_t data_len,
                         const char *mac_hex)
{
    uint8_t want[CRN_SHA256_LEN];
    uint8_t got[CRN_SHA256_LEN];
    size_t n = unhex(mac_hex, want, sizeof(want));

    ASSERT_EQ(crn_hmac_sha256(key, key_len, data, data_len, got), 0);
    ASSERT_MEM_EQ(got, want, n);
}

static void check_hex(const char *key_hex, const char *data_hex,
                      const char *mac_hex)
{
    uint8_t key[256], data[256];
    size_t kl = unhex(key_hex, key, sizeof(key));
    size_t dl = unhex(data_hex, data, sizeof(data));

    check_vector(key, kl, data, dl, mac_hex);
}

static void check_text(size_t key_len, uint8_t key_byte, const char *text,
                       const char *mac_hex)
{
    uint8_t key[256];

    memset(key, key_byte, key_len);
    check_vector(key, key_len, (const uint8_t *)text, strlen(text), mac_hex);
}

/* RFC 4231 section 4: test cases 1 to 7. */
TEST(auth_hmac_rfc4231)
{
    check_text(20, 0x0b, "Hi There",
               "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32"
               "cff7");
    check_hex("4a656665",
              "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec"
              "3843");
    {
        uint8_t key[20], data[50];
        memset(key, 0xaa, sizeof(key));
        memset(data, 0xdd, sizeof(data));
        check_vector(key, sizeof(key), data, sizeof(data),
                     "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514"
                     "ced565fe");
    }
    {
        uint8_t key[25], data[50];
        for (int i = 0; i < 25; i++)
            key[i] = (uint8_t)(i + 1);
        memset(data, 0xcd, sizeof(data));
        check_vector(key, sizeof(key), data, sizeof(data),
                     "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff4"
                     "6729665b");
    }
    check_text(20, 0x0c, "Test With Truncation",
               "a3b6167473100ee06e0c796c2955552b");
    check_text(131, 0xaa,
               "Test Using Larger Than Block-Size Key - Hash Key First",
               "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee3"
               "7f54");
    check_text(131, 0xaa,
               "This is a test using a larger than block-size key and a "
               "larger than block-size data. The key needs to be hashed "
               "before being used by the HMAC algorithm.",
               "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a"
               "35e2");
}

/* Messages around SHA-256's padding boundaries, against values computed by
 * Python's hmac module; an empty key and message; bad arguments. */
TEST(auth_hmac_edges)
{
    static const struct {
        size_t len;
        const char *mac;
    } rows[] = {
        {55, "5c753ac4cf15a28e7b5a045ba8ce75e02545a313f326021d770912f768fb53ef"},
        {56, "e9613a403652aa5873dba8b56f223826236e87559a8d8ac63190613796d2319a"},
        {63, "c5531cccae97b1a3e84ffd19fb9468e928c41d6acb9279cf4bac4aaf314196ae"},
        {64, "77207571ea4243ad8e0f220679a62f9033b6d2f59f8d44517d8e9c4857b96fa0"},
        {65, "4361807d77bd8d84a0ec7bc26ddb24e62e4ab3c65196d1c63ef12db96ce974d0"},
        {119, "4ffbedd6a1157e63e62d3fa284549bcfe39fb98dbb77ac48a89120aed5747d6b"},
        {120, "d1cd515a6389be4c26cf09c03af5b128fe8fcc95992b8e2bae38bef7e54b3ef1"},
        {128, "b8e3a64cbd7ba55e73230992b611446c6c7f0a1e151f2f474acca2c8fd4a2f09"},
    };
    uint8_t msg[128];
    uint8_t out[CRN_SHA256_LEN];

    memset(msg, 'a', sizeof(msg));
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        check_vector((const uint8_t *)"key", 3, msg, rows[i].len,
                     rows[i].mac);
    check_vector(NULL, 0, NULL, 0,
                 "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292"
                 "c5ad");
    ASSERT_EQ(crn_hmac_sha256(NULL, 1, msg, 1, out), -EINVAL);
    ASSERT_EQ(crn_hmac_sha256(msg, 1, NULL, 1, out), -EINVAL);
    ASSERT_EQ(crn_hmac_sha256(msg, 1, msg, 1, NULL), -EINVAL);
}

TEST(auth_random_bytes)
{
    uint8_t a[32] = {0}, b[32] = {0};

    ASSERT_EQ(crn_random_bytes(a, sizeof(a)), 0);
    ASSERT_EQ(crn_random_bytes(b, sizeof(b)), 0);
    ASSERT(memcmp(a, b, sizeof(a)) != 0);
    ASSERT_EQ(crn_random_bytes(a, 0), 0);
}

/* Writes LEN bytes of BYTE to a new temporary file; returns its path. */
static char *temp_key(size_t len, int byte)
{
    static char path[64];
    uint8_t *buf = malloc(len + 1);
    int fd;

    ASSERT(buf != NULL);
    snprintf(path, sizeof(path), "/tmp/crane-key-XXXXXX");
    fd = mkstemp(path);
    ASSERT(fd >= 0);
    memset(buf, byte, len);
    ASSERT_EQ(write(fd, buf, len), (ssize_t)len);
    close(fd);
    free(buf);
    return path;
}

TEST(auth_key_load)
{
    uint8_t *key = NULL;
    size_t len = 0;
    char *path;

    path = temp_key(CRN_AUTH_KEY_MAX, 'k');
    ASSERT_EQ(crn_auth_key_load(path, &key, &len), 0);
    ASSERT_EQ(len, CRN_AUTH_KEY_MAX);
    ASSERT_EQ(key[0], 'k');
    free(key);
    unlink(path);

    path = temp_key(CRN_AUTH_KEY_MAX + 1, 'k');
    ASSERT_EQ(crn_auth_key_load(path, &key, &len), -EFBIG);
    unlink(path);

    path = temp_key(0, 0);
    ASSERT_EQ(crn_auth_key_load(path, &key, &len), -EINVAL);
    unlink(path);

    ASSERT_EQ(crn_auth_key_load("/nonexistent/key", &key, &len), -ENOENT);
    ASSERT_EQ(crn_auth_key_load(NULL, &key, &len), -EINVAL);
}

TEST(auth_equal)
{
    uint8_t a[32] = { 0 }, b[32] = { 0 };

    ASSERT_EQ(crn_auth_equal(a, b, sizeof(a)), 1);
    ASSERT_EQ(crn_auth_equal(a, b, 0), 1);
    b[31] = 1;                       /* the last byte counts */
    ASSERT_EQ(crn_auth_equal(a, b, sizeof(a)), 0);
    ASSERT_EQ(crn_auth_equal(a, b, 31), 1);
    b[31] = 0;
    b[0] = 0x80;                     /* so does the first */
    ASSERT_EQ(crn_auth_equal(a, b, sizeof(a)), 0);
}
