/* ecco-autotune driver (MIT): CAST encryption (ECB) of the input. */
#include "ecco_driver.h"
#include "block_base.h"

int CAST_start_operation(const uint8_t key[], size_t key_len, void **state);
int CAST_stop_operation(BlockBase *state);

__attribute__((noinline)) size_t ecco_kernel(const uint8_t *in, size_t n, uint8_t *out) {
    uint8_t key[16];
    for (int i = 0; i < 16; i++) key[i] = (uint8_t)(7 * i + 3);
    void *st = NULL;
    if (CAST_start_operation(key, sizeof key, &st) != 0) return 0;
    BlockBase *base = (BlockBase *)st;
    base->encrypt(base, in, out, n);
    CAST_stop_operation(base);
    return n;
}
