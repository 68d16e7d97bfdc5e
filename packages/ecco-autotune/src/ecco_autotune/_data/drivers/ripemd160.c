/* ecco-autotune driver (MIT): ripemd160 of every 1 KiB chunk of the input. */
#include "ecco_driver.h"

typedef struct hash_state hash_state;
int ripemd160_init(hash_state **state);
int ripemd160_update(hash_state *state, const uint8_t *buf, size_t len);
int ripemd160_digest(const hash_state *state, uint8_t *digest);
int ripemd160_destroy(hash_state *state);

__attribute__((noinline)) size_t ecco_kernel(const uint8_t *in, size_t n, uint8_t *out) {
    size_t m = 0;
    for (size_t off = 0; off + 1024 <= n; off += 1024) {
        hash_state *hs = NULL;
        if (ripemd160_init(&hs) != 0) return 0;
        ripemd160_update(hs, in + off, 1024);
        ripemd160_digest(hs, out + m);
        ripemd160_destroy(hs);
        m += 20;
    }
    return m;
}
