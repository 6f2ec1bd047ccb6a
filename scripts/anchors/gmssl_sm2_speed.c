/* SM2 signing and verification rates of a GmSSL build, one thread: the anchor beside chainsig's
 * lanes (scripts/cpu-anchors.sh builds GmSSL from source and links this against it).
 * Signs N fresh random digests with one key (sm2_do_sign: r, s without DER), then verifies each
 * (sm2_do_verify), three rounds; prints the best round's rates. Every signature must verify, and
 * one spoiled signature must not, or the program fails. Usage: gmssl_sm2_speed [N, default 4096] */
#include <gmssl/rand.h>
#include <gmssl/sm2.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4096;
    if (n <= 0) return 2;
    SM2_KEY key;
    uint8_t(*dgst)[32] = malloc((size_t)n * 32);
    SM2_SIGNATURE *sig = malloc((size_t)n * sizeof(SM2_SIGNATURE));
    if (!dgst || !sig || sm2_key_generate(&key) != 1) return 1;
    /* rand_bytes gives at most 256 bytes a call. */
    for (size_t at = 0; at < (size_t)n * 32; at += 256) {
        size_t left = (size_t)n * 32 - at;
        if (rand_bytes((uint8_t *)dgst + at, left < 256 ? left : 256) != 1) return 1;
    }
    double best_sign = 0, best_verify = 0;
    for (int round = 0; round < 3; round++) {
        double t0 = now();
        for (int i = 0; i < n; i++)
            if (sm2_do_sign(&key, dgst[i], &sig[i]) != 1) return 1;
        double t1 = now();
        int valid = 0;
        for (int i = 0; i < n; i++) valid += sm2_do_verify(&key, dgst[i], &sig[i]) == 1;
        double t2 = now();
        if (valid != n) {
            fprintf(stderr, "only %d of %d signatures verified\n", valid, n);
            return 1;
        }
        if (n / (t1 - t0) > best_sign) best_sign = n / (t1 - t0);
        if (n / (t2 - t1) > best_verify) best_verify = n / (t2 - t1);
    }
    sig[0].s[31] ^= 1;
    if (sm2_do_verify(&key, dgst[0], &sig[0]) == 1) {
        fprintf(stderr, "a spoiled signature verified\n");
        return 1;
    }
    printf("gmssl sm2: sign %.0f/s verify %.0f/s (%d digests, best of 3 rounds)\n", best_sign,
           best_verify, n);
    free(dgst);
    free(sig);
    return 0;
}
