/* ecco-autotune driver (MIT): ChaCha20 keystream XOR over the input. */
#include "ecco_driver.h"

typedef struct stream_state stream_state;
int chacha20_init(stream_state **state, const uint8_t *key, size_t keySize,
                  const uint8_t *nonce, size_t nonceSize);
int chacha20_encrypt(stream_state *state, const uint8_t in[], uint8_t out[], size_t len);
int chacha20_destroy(stream_state *state);

__attribute__((noinline)) size_t ecco_kernel(const uint8_t *in, size_t n, uint8_t *out) {
    uint8_t key[32], nonce[8];
    for (int i = 0; i < 32; i++) key[i] = (uint8_t)(5 * i + 7);
    for (int i = 0; i < 8; i++) nonce[i] = (uint8_t)(11 * i);
    stream_state *st = NULL;
    if (chacha20_init(&st, key, sizeof key, nonce, sizeof nonce) != 0) return 0;
    chacha20_encrypt(st, in, out, n);
    chacha20_destroy(st);
    return n;
}
