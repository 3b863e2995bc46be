#ifndef FINGERSEAL_CCRYPTO_SHIM_H
#define FINGERSEAL_CCRYPTO_SHIM_H
/* OpenSSL's libcrypto (3.0 on Debian 12), for JOSE signature verification (public keys built
 * from JWK members, and EVP_DigestVerify) and DPoP proofs (a P-256 key, EVP_DigestSign). Linked, not dlopened like libcurl: the broker
 * already loads libcrypto through tss2-esys, and libcurl's TLS pulls it in too.
 *
 * Typed shims for what Swift cannot call directly: OSSL_PARAM building (arrays of structs
 * with string keys), macros (EVP_PKEY_PUBLIC_KEY), and ECDSA_SIG's DER encoding. Each returns
 * a pointer the caller owns (freed with fs_crypto_pkey_free) or NULL, and 1/0 for checks.
 * Each clears this thread's OpenSSL error queue before returning: a refused key or signature
 * leaves entries there, which would otherwise surface in libcurl's TLS error reports. */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Builds a public key of `type` ("RSA", "EC") from a parameter list; NULL on any failure. */
static inline EVP_PKEY *fs_crypto_pkey_fromdata(const char *type, OSSL_PARAM *params) {
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    if (ctx && EVP_PKEY_fromdata_init(ctx) == 1 && EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = NULL;
    EVP_PKEY_CTX_free(ctx);
    return key;
}

/* An RSA public key from its big-endian modulus and exponent (JWK "n", "e"). */
static inline EVP_PKEY *fs_crypto_rsa_public_key(const uint8_t *n, size_t n_length, const uint8_t *e, size_t e_length) {
    EVP_PKEY *key = NULL;
    BIGNUM *modulus = BN_bin2bn(n, (int)n_length, NULL);
    BIGNUM *exponent = BN_bin2bn(e, (int)e_length, NULL);
    OSSL_PARAM_BLD *build = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    if (modulus && exponent && build && n_length <= 4096 && e_length <= 8
        && OSSL_PARAM_BLD_push_BN(build, OSSL_PKEY_PARAM_RSA_N, modulus) == 1
        && OSSL_PARAM_BLD_push_BN(build, OSSL_PKEY_PARAM_RSA_E, exponent) == 1
        && (params = OSSL_PARAM_BLD_to_param(build)) != NULL)
        key = fs_crypto_pkey_fromdata("RSA", params);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(build);
    BN_free(exponent);
    BN_free(modulus);
    ERR_clear_error();
    return key;
}

/* A P-256 public key from its 32-byte affine coordinates (JWK "x", "y"). OpenSSL refuses a
 * point that is not on the curve when it decodes the uncompressed point; the public check
 * below is the belt to that. */
static inline EVP_PKEY *fs_crypto_p256_public_key(const uint8_t *x, const uint8_t *y) {
    unsigned char point[65];
    char group[] = SN_X9_62_prime256v1;
    point[0] = 0x04; /* uncompressed (SEC 1 2.3.3) */
    memcpy(point + 1, x, 32);
    memcpy(point + 33, y, 32);
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point),
        OSSL_PARAM_construct_end(),
    };
    EVP_PKEY *key = fs_crypto_pkey_fromdata("EC", params);
    EVP_PKEY_CTX *ctx = key ? EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL) : NULL;
    int valid = ctx && EVP_PKEY_public_check(ctx) == 1;
    EVP_PKEY_CTX_free(ctx);
    if (!valid) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    ERR_clear_error();
    return key;
}

/* An Ed25519 public key from its 32 raw bytes (JWK "x", RFC 8037). */
static inline EVP_PKEY *fs_crypto_ed25519_public_key(const uint8_t *x) {
    EVP_PKEY *key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x, 32);
    ERR_clear_error();
    return key;
}

static inline void fs_crypto_pkey_free(EVP_PKEY *key) { EVP_PKEY_free(key); }

/* The key's size in bits (the RSA modulus, the EC field). */
static inline int fs_crypto_pkey_bits(const EVP_PKEY *key) { return EVP_PKEY_get_bits(key); }

/* 1 when `signature` is `key`'s signature over `message` with SHA-256 (RSA PKCS #1 v1.5, and
 * ECDSA with a DER signature), or with no digest (Ed25519, which hashes internally). */
static inline int fs_crypto_verify(EVP_PKEY *key, int sha256, const uint8_t *signature, size_t signature_length,
                                   const uint8_t *message, size_t message_length) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, sha256 ? EVP_sha256() : NULL, NULL, key) == 1
        && EVP_DigestVerify(ctx, signature, signature_length, message, message_length) == 1;
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

/* JWS ES256 signatures are r || s, 32 bytes each (RFC 7518 3.4); OpenSSL verifies the DER
 * ECDSA-Sig-Value. Writes at most 72 bytes (two 33-byte INTEGERs and headers) to `der`;
 * returns the length, or 0. */
static inline size_t fs_crypto_ecdsa_raw_to_der(const uint8_t *raw, uint8_t der[80]) {
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, 32, NULL);
    BIGNUM *s = BN_bin2bn(raw + 32, 32, NULL);
    size_t length = 0;
    if (sig && r && s && ECDSA_SIG_set0(sig, r, s) == 1) {
        r = s = NULL; /* owned by sig now */
        if (i2d_ECDSA_SIG(sig, NULL) <= 80) {
            unsigned char *out = der;
            int written = i2d_ECDSA_SIG(sig, &out);
            length = written > 0 ? (size_t)written : 0;
        }
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    ERR_clear_error();
    return length;
}

/* --- DPoP proof keys (RFC 9449): a P-256 key of our own, for signing only. --- */

/* A new P-256 private key, or NULL. */
static inline EVP_PKEY *fs_crypto_p256_generate(void) {
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", SN_X9_62_prime256v1);
    ERR_clear_error();
    return key;
}

/* The private key as DER (the unencrypted PKCS #8 that d2i_AutoPrivateKey reads) into `out`,
 * at most `capacity` bytes; the length, or 0. The caller wipes `out`; OpenSSL's own copy is
 * cleared before it is freed. */
static inline size_t fs_crypto_private_key_der(EVP_PKEY *key, uint8_t *out, size_t capacity) {
    unsigned char *der = NULL;
    int length = i2d_PrivateKey(key, &der);
    size_t written = 0;
    if (length > 0 && (size_t)length <= capacity) {
        memcpy(out, der, (size_t)length);
        written = (size_t)length;
    }
    if (der) OPENSSL_clear_free(der, length > 0 ? (size_t)length : 0);
    ERR_clear_error();
    return written;
}

/* A P-256 private key from its DER; NULL when it is not one. */
static inline EVP_PKEY *fs_crypto_p256_private_key(const uint8_t *der, size_t length) {
    const unsigned char *in = der;
    EVP_PKEY *key = d2i_AutoPrivateKey(NULL, &in, (long)length);
    char group[64] = {0};
    size_t group_length = 0;
    if (key && (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC
                || EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &group_length) != 1
                || strcmp(group, SN_X9_62_prime256v1) != 0)) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    ERR_clear_error();
    return key;
}

/* The public point's affine coordinates (JWK "x", "y"), 32 bytes each; 1 on success. */
static inline int fs_crypto_p256_public_coordinates(const EVP_PKEY *key, uint8_t x[32], uint8_t y[32]) {
    unsigned char point[65];
    size_t length = 0;
    int ok = EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point, sizeof point, &length) == 1
        && length == 65 && point[0] == 0x04;
    if (ok) {
        memcpy(x, point + 1, 32);
        memcpy(y, point + 33, 32);
    }
    ERR_clear_error();
    return ok;
}

/* ES256 over `message`: SHA-256 and ECDSA, written as r || s (RFC 7518 3.4) into `raw`;
 * 1 on success. */
static inline int fs_crypto_es256_sign(EVP_PKEY *key, const uint8_t *message, size_t message_length, uint8_t raw[64]) {
    unsigned char der[80];
    size_t der_length = sizeof der;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) == 1
        && EVP_DigestSign(ctx, der, &der_length, message, message_length) == 1;
    EVP_MD_CTX_free(ctx);
    ECDSA_SIG *sig = NULL;
    if (ok) {
        const unsigned char *in = der;
        sig = d2i_ECDSA_SIG(NULL, &in, (long)der_length);
        const BIGNUM *r = NULL, *s = NULL;
        if (sig) ECDSA_SIG_get0(sig, &r, &s);
        ok = sig && r && s && BN_bn2binpad(r, raw, 32) == 32 && BN_bn2binpad(s, raw + 32, 32) == 32;
    }
    ECDSA_SIG_free(sig);
    ERR_clear_error();
    return ok;
}

/* Zeroes `length` bytes at `data` in a way the compiler keeps (a key's DER once sealed). */
static inline void fs_crypto_cleanse(void *data, size_t length) { OPENSSL_cleanse(data, length); }

#endif
