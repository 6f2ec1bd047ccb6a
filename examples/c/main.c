/* chainsig from C: pack four rows, verify them at once and through a ticket, print the verdicts;
 * then recover the sender of a raw Ethereum transaction from a transaction row.
 *
 * Build and run from the repository root (see Makefile):
 *   cargo build --release -p chainsig-capi
 *   cc -I crates/capi/include examples/c/main.c -L target/release -lchainsig -o chainsig-example
 *   LD_LIBRARY_PATH=target/release ./chainsig-example
 *
 * The signatures were made with OpenSSL (through Python's cryptography package) over SHA-256.
 * Exits 0 when every verdict is the expected one.
 */
#include <chainsig.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void unhex(const char *hex, uint8_t *out) {
  for (size_t i = 0; hex[2 * i]; i++) sscanf(hex + 2 * i, "%2hhx", &out[i]);
}

/* Appends one row (the layout is in chainsig.h) at buf + *at; returns its length. */
static size_t put_row(uint8_t *buf, size_t *at, uint8_t alg, uint8_t flags, const char *pubkey_hex,
                      const char *sig_hex, const uint8_t *payload, uint32_t payload_len) {
  uint8_t *row = buf + *at;
  size_t pubkey_len = strlen(pubkey_hex) / 2;
  size_t len = CS_ROW_HEADER_LEN + pubkey_len + CS_SIG_LEN + payload_len;
  len = (len + CS_ROW_ALIGN - 1) / CS_ROW_ALIGN * CS_ROW_ALIGN;
  memset(row, 0, len);
  row[0] = alg;
  row[1] = flags;
  memcpy(row + 4, &payload_len, 4); /* little-endian hosts; a big-endian one would swap */
  row[10] = (uint8_t)pubkey_len;
  unhex(pubkey_hex, row + CS_ROW_HEADER_LEN);
  unhex(sig_hex, row + CS_ROW_HEADER_LEN + pubkey_len);
  memcpy(row + CS_ROW_HEADER_LEN + pubkey_len + CS_SIG_LEN, payload, payload_len);
  *at += len;
  return len;
}

/* Appends one transaction row (CS_ALG_ETH_TX: the header, the transaction, zero padding). */
static void put_tx_row(uint8_t *buf, size_t *at, const uint8_t *tx, uint32_t tx_len) {
  uint8_t *row = buf + *at;
  size_t len = (CS_ROW_HEADER_LEN + tx_len + CS_ROW_ALIGN - 1) / CS_ROW_ALIGN * CS_ROW_ALIGN;
  memset(row, 0, len);
  row[0] = CS_ALG_ETH_TX;
  memcpy(row + 4, &tx_len, 4); /* little-endian hosts, as above */
  memcpy(row + CS_ROW_HEADER_LEN, tx, tx_len);
  *at += len;
}

/* The EIP-155 example transaction (nonce 9, 1 ether to 0x3535…35 on chain 1), signed by the key
 * 0x4646…46, whose address is 0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F. */
static const char *EIP155_TX =
    "f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a0"
    "28ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb70330"
    "4b3800ccf555c9f3dc64214b297fb1966a3b6d83";
static const char *EIP155_SENDER = "9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f";

static const char *P256_KEY = "02088bb9ff22ab291a74c86fc677ba897baadee370cc6129b82d170ba3fc26415c";
static const char *P256_SIG =
    "9cf358a8f084c1f3a172721392962036a392773330ff70ebf413742806ececd7"
    "01253ee230d906ebad46cecebb18bd3f30f67f15819e6dc5b620f15bfae5a761";
static const char *K1_KEY = "02f30e4bd8094e53a679ddb8f55b5216b03c44623fc4279ef0791f9aa1f6930d49";
static const char *K1_SIG =
    "69d21faffdaa3f69f7aa2b4096e013688287b527da036fe328213245dcf304bf"
    "375464b31f26a50b0ed3fc3b7c2c9efe046c64690abe0c02a54ce8c5c054895e";
static const char *K1_DIGEST = "32c692e39384f9576fc9db933dc4eea0e30c28673ec8e6b3272b5d708d5de903";

static int report(const char *how, const uint64_t *bitmap, const int32_t *errors, size_t n) {
  printf("%s: bitmap word 0 = 0x%016" PRIx64 "\n", how, bitmap[0]);
  for (size_t i = 0; i < n; i++)
    printf("  record %zu: %s%s%s\n", i, (bitmap[i / 64] >> (i % 64)) & 1 ? "valid" : "invalid",
           errors[i] ? ", error: " : "", errors[i] ? cs_status_str(errors[i]) : "");
  /* Expected: records 0 and 1 valid, 2 invalid (digest altered), 3 refused (algorithm 9). */
  return bitmap[0] == 0x3 && errors[0] == CS_OK && errors[1] == CS_OK && errors[2] == CS_OK &&
         errors[3] == CS_REC_ALGORITHM;
}

int main(void) {
  uint64_t storage[128] = {0}; /* uint64_t storage keeps the buffer 8-byte aligned */
  uint8_t *rows = (uint8_t *)storage;
  size_t at = 0;
  const char *msg = "chainsig C example: p256";
  uint8_t digest[32];
  unhex(K1_DIGEST, digest);

  /* 0: P-256 over a message the library hashes (SHA-256, the P-256 default). */
  put_row(rows, &at, CS_ALG_P256, CS_FLAG_MESSAGE, P256_KEY, P256_SIG, (const uint8_t *)msg,
          (uint32_t)strlen(msg));
  /* 1: secp256k1 over a digest, under the low-s rule. */
  put_row(rows, &at, CS_ALG_SECP256K1, CS_FLAG_LOW_S, K1_KEY, K1_SIG, digest, 32);
  /* 2: the same with one bit of the digest flipped. */
  digest[0] ^= 1;
  put_row(rows, &at, CS_ALG_SECP256K1, CS_FLAG_LOW_S, K1_KEY, K1_SIG, digest, 32);
  /* 3: an algorithm byte the library does not know. */
  put_row(rows, &at, 9, 0, K1_KEY, K1_SIG, digest, 32);
  const size_t n = 4;

  cs_context *ctx = NULL;
  if (cs_open("auto", NULL, &ctx) != CS_OK) {
    fprintf(stderr, "cs_open: %s\n", cs_last_error(NULL));
    return 1;
  }
  printf("chainsig %s\n", cs_version());

  uint64_t bitmap[1];
  int32_t errors[4];
  int32_t rc = cs_verify(ctx, rows, at, n, bitmap, 1, errors);
  if (rc != CS_OK) {
    fprintf(stderr, "cs_verify: %s\n", cs_last_error(ctx));
    return 1;
  }
  int ok = report("cs_verify", bitmap, errors, n);
  printf("  first record error: %s\n", cs_last_error(ctx));

  cs_ticket *ticket = NULL;
  if (cs_submit(ctx, rows, at, n, &ticket) != CS_OK) {
    fprintf(stderr, "cs_submit: %s\n", cs_last_error(ctx));
    return 1;
  }
  memset(storage, 0, sizeof storage); /* the ticket has its own copy */
  rc = cs_wait(ticket, bitmap, 1, errors);
  cs_ticket_free(ticket);
  if (rc != CS_OK) {
    fprintf(stderr, "cs_wait: %s\n", cs_last_error(ctx));
    return 1;
  }
  ok &= report("cs_submit + cs_wait", bitmap, errors, n);

  /* A misaligned buffer is refused as a whole. */
  rc = cs_verify(ctx, rows + 1, 8, 1, bitmap, 1, NULL);
  printf("misaligned buffer: %s\n", cs_status_str(rc));
  ok &= rc == CS_ERR_ALIGNMENT;

  /* Senders of raw transactions: the example, and the same cut short by a byte. */
  uint8_t tx[110], sender[20], addresses[2 * CS_ADDRESS_LEN];
  uint64_t found[1];
  unhex(EIP155_TX, tx);
  unhex(EIP155_SENDER, sender);
  memset(storage, 0, sizeof storage);
  at = 0;
  put_tx_row(rows, &at, tx, sizeof tx);
  put_tx_row(rows, &at, tx, sizeof tx - 1);
  rc = cs_recover_transactions(ctx, rows, at, 2, addresses, NULL, found, 1, errors);
  if (rc != CS_OK) {
    fprintf(stderr, "cs_recover_transactions: %s\n", cs_last_error(ctx));
    return 1;
  }
  printf("cs_recover_transactions: sender of record 0: 0x");
  for (int i = 0; i < 20; i++) printf("%02x", addresses[i]);
  printf("\n  record 1: %s (%s)\n", cs_status_str(errors[1]), cs_last_error(ctx));
  ok &= found[0] == 1 && errors[0] == CS_OK && memcmp(addresses, sender, 20) == 0 &&
        errors[1] == CS_REC_TX_RLP;

  cs_close(ctx);
  printf("%s\n", ok ? "all verdicts as expected" : "UNEXPECTED VERDICTS");
  return ok ? 0 : 1;
}
