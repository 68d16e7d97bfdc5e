/* ecco-autotune driver (MIT): SHA1 of every 1 KiB chunk of the input. */
#include "ecco_driver.h"

typedef struct hash_state hash_state;
int SHA1_init(hash_state **state);
int SHA1_update(hash_state *state, const uint8_t *buf, size_t len);
int SHA1_digest(const hash_state *state, uint8_t *digest);
int SHA1_destroy(hash_state *state);

__attribute__((noinline)) size_t ecco_kernel(const uint8_t *in, size_t n, uint8_t *out) {
    size_t m = 0;
    for (size_t off = 0; off + 1024 <= n; off += 1024) {
        hash_state *hs = NULL;
        if (SHA1_init(&hs) != 0) return 0;
        SHA1_update(hs, in + off, 1024);
        SHA1_digest(hs, out + m);
        SHA1_destroy(hs);
        m += 20;
    }
    return m;
}
