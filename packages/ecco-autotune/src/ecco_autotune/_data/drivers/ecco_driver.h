/* Driver harness of ecco-autotune (MIT, icml26-optim contributors).
 *
 * Fills an input buffer of argv[1] bytes (default 65536) from a fixed linear
 * congruential generator, runs ecco_kernel() once (the only code that the cost
 * model measures) and prints the FNV-1a checksum of its output and its length,
 * which every optimised build must reproduce exactly. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t ecco_kernel(const uint8_t *in, size_t n, uint8_t *out);

static uint8_t *ecco_input(size_t n) {
    uint8_t *b = (uint8_t *)malloc(n ? n : 1);
    uint32_t s = 0x12345678u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        b[i] = (uint8_t)(s >> 24);
    }
    return b;
}

static uint64_t ecco_fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 65536u;
    n -= n % 64; /* whole blocks for every cipher */
    uint8_t *in = ecco_input(n);
    uint8_t *out = (uint8_t *)calloc(n + 64, 1);
    size_t m = ecco_kernel(in, n, out);
    printf("%016llx %zu\n", (unsigned long long)ecco_fnv1a(out, m), m);
    free(in);
    free(out);
    return 0;
}
