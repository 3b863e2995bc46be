#ifndef FINGERSEAL_CTSS2_SHIM_H
#define FINGERSEAL_CTSS2_SHIM_H
#include <string.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_tctildr.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>

/* Typed builders for the structures TPMKit hands to ESAPI: Swift sees their fixed-size
 * buffers as tuples, which are easy to get wrong. Each fills `out` completely. */

/* The storage primary key: the TCG SRK template, ECC NIST P-256 with AES-128-CFB, in the
 * owner hierarchy (the template systemd uses). Derived from the owner seed, so the same
 * template gives the same key (and name) until the TPM is cleared. */
static inline void fs_tpm_srk_template(TPM2B_PUBLIC *out) {
    memset(out, 0, sizeof *out);
    TPMT_PUBLIC *area = &out->publicArea;
    area->type = TPM2_ALG_ECC;
    area->nameAlg = TPM2_ALG_SHA256;
    area->objectAttributes = TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT
        | TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_NODA;
    area->parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
    area->parameters.eccDetail.symmetric.keyBits.aes = 128;
    area->parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
    area->parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
    area->parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    area->parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
}

/* A sealed data object (keyed hash, no scheme) that never leaves this TPM. With a policy
 * it opens only through that policy; without one, through its authValue. Dictionary-attack
 * protected unless `no_da`. Returns -1 when the policy digest does not fit. */
static inline int fs_tpm_sealed_template(TPM2B_PUBLIC *out, const uint8_t *policy, size_t policy_size, int no_da) {
    memset(out, 0, sizeof *out);
    if (policy_size > sizeof out->publicArea.authPolicy.buffer) return -1;
    TPMT_PUBLIC *area = &out->publicArea;
    area->type = TPM2_ALG_KEYEDHASH;
    area->nameAlg = TPM2_ALG_SHA256;
    area->objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT;
    if (policy_size == 0) area->objectAttributes |= TPMA_OBJECT_USERWITHAUTH;
    if (no_da) area->objectAttributes |= TPMA_OBJECT_NODA;
    area->authPolicy.size = (UINT16)policy_size;
    if (policy_size) memcpy(area->authPolicy.buffer, policy, policy_size);
    area->parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL;
    return 0;
}

/* The sensitive part of a new object: its authValue and the data to seal. Returns -1 when
 * either does not fit. The caller wipes `out` after use. */
static inline int fs_tpm_sensitive(TPM2B_SENSITIVE_CREATE *out, const uint8_t *auth, size_t auth_size,
                                   const uint8_t *data, size_t data_size) {
    memset(out, 0, sizeof *out);
    if (auth_size > sizeof out->sensitive.userAuth.buffer || data_size > sizeof out->sensitive.data.buffer) return -1;
    out->sensitive.userAuth.size = (UINT16)auth_size;
    if (auth_size) memcpy(out->sensitive.userAuth.buffer, auth, auth_size);
    out->sensitive.data.size = (UINT16)data_size;
    if (data_size) memcpy(out->sensitive.data.buffer, data, data_size);
    return 0;
}

/* An authValue. Returns -1 when it does not fit. The caller wipes `out` after use. */
static inline int fs_tpm_auth(TPM2B_AUTH *out, const uint8_t *auth, size_t auth_size) {
    memset(out, 0, sizeof *out);
    if (auth_size > sizeof out->buffer) return -1;
    out->size = (UINT16)auth_size;
    if (auth_size) memcpy(out->buffer, auth, auth_size);
    return 0;
}

/* PCRs of the SHA-256 bank, one bit per PCR (bit n: PCR n, 0 to 23). */
static inline void fs_tpm_pcr_selection(TPML_PCR_SELECTION *out, uint32_t mask) {
    memset(out, 0, sizeof *out);
    out->count = 1;
    out->pcrSelections[0].hash = TPM2_ALG_SHA256;
    out->pcrSelections[0].sizeofSelect = 3;
    out->pcrSelections[0].pcrSelect[0] = (BYTE)(mask & 0xff);
    out->pcrSelections[0].pcrSelect[1] = (BYTE)((mask >> 8) & 0xff);
    out->pcrSelections[0].pcrSelect[2] = (BYTE)((mask >> 16) & 0xff);
}

/* Parameter encryption for sessions: AES-128 in CFB mode. */
static inline void fs_tpm_session_symmetric(TPMT_SYM_DEF *out) {
    memset(out, 0, sizeof *out);
    out->algorithm = TPM2_ALG_AES;
    out->keyBits.aes = 128;
    out->mode.aes = TPM2_ALG_CFB;
}

/* A signing key (ECC NIST P-256, ECDSA with SHA-256) that never leaves this TPM and is used
 * with its authValue (DPoP proofs, RFC 9449). Outside the dictionary-attack lockout: its
 * authValue is a random value only an unlocked vault yields, never a person's guess, and the
 * lockout is one counter for the whole machine. */
static inline void fs_tpm_signing_template(TPM2B_PUBLIC *out) {
    memset(out, 0, sizeof *out);
    TPMT_PUBLIC *area = &out->publicArea;
    area->type = TPM2_ALG_ECC;
    area->nameAlg = TPM2_ALG_SHA256;
    area->objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN
        | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_NODA;
    area->parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
    area->parameters.eccDetail.scheme.scheme = TPM2_ALG_ECDSA;
    area->parameters.eccDetail.scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
    area->parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    area->parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
}

/* The public point of an ECC key's public area, 32 bytes each (left-padded); -1 when it is
 * not a P-256 point. */
static inline int fs_tpm_ecc_point(const TPM2B_PUBLIC *in, uint8_t x[32], uint8_t y[32]) {
    const TPMS_ECC_POINT *point = &in->publicArea.unique.ecc;
    if (in->publicArea.type != TPM2_ALG_ECC || point->x.size > 32 || point->y.size > 32) return -1;
    memset(x, 0, 32);
    memset(y, 0, 32);
    memcpy(x + 32 - point->x.size, point->x.buffer, point->x.size);
    memcpy(y + 32 - point->y.size, point->y.buffer, point->y.size);
    return 0;
}

/* A SHA-256 digest to sign, the ECDSA scheme, and the null ticket an unrestricted key takes. */
static inline void fs_tpm_sign_inputs(TPM2B_DIGEST *digest, const uint8_t hash[32], TPMT_SIG_SCHEME *scheme,
                                      TPMT_TK_HASHCHECK *ticket) {
    memset(digest, 0, sizeof *digest);
    digest->size = 32;
    memcpy(digest->buffer, hash, 32);
    memset(scheme, 0, sizeof *scheme);
    scheme->scheme = TPM2_ALG_ECDSA;
    scheme->details.ecdsa.hashAlg = TPM2_ALG_SHA256;
    memset(ticket, 0, sizeof *ticket);
    ticket->tag = TPM2_ST_HASHCHECK;
    ticket->hierarchy = TPM2_RH_NULL;
}

/* An ECDSA signature's r and s, 32 bytes each (left-padded): JWS ES256's r || s. -1 when it
 * is not one. */
static inline int fs_tpm_ecdsa_rs(const TPMT_SIGNATURE *in, uint8_t rs[64]) {
    const TPMS_SIGNATURE_ECC *ecc = &in->signature.ecdsa;
    if (in->sigAlg != TPM2_ALG_ECDSA || ecc->signatureR.size > 32 || ecc->signatureS.size > 32) return -1;
    memset(rs, 0, 64);
    memcpy(rs + 32 - ecc->signatureR.size, ecc->signatureR.buffer, ecc->signatureR.size);
    memcpy(rs + 64 - ecc->signatureS.size, ecc->signatureS.buffer, ecc->signatureS.size);
    return 0;
}

/* Values whose macros carry casts, which Swift does not import. */
static const uint32_t fs_tpm_rc_lockout = TPM2_RC_LOCKOUT;
static const uint32_t fs_tpma_object_noda = TPMA_OBJECT_NODA;
static const uint32_t fs_tpm_rc_auth_fail = TPM2_RC_AUTH_FAIL;
static const uint32_t fs_tpm_rc_bad_auth = TPM2_RC_BAD_AUTH;
static const uint32_t fs_tpm_rc_policy_fail = TPM2_RC_POLICY_FAIL;
static const uint32_t fs_tpm_rc_pcr_changed = TPM2_RC_PCR_CHANGED;
static const uint32_t fs_tpm_rc_integrity = TPM2_RC_INTEGRITY;
static const uint32_t fs_tpm_rc_object_memory = TPM2_RC_OBJECT_MEMORY;
static const uint32_t fs_tpm_rc_session_memory = TPM2_RC_SESSION_MEMORY;
static const uint32_t fs_tpm_rc_fmt1 = TPM2_RC_FMT1;
static const uint32_t fs_tpm_rc_handle = TPM2_RC_HANDLE;
static const uint32_t fs_tss2_rc_layer_mask = TSS2_RC_LAYER_MASK;
static const uint32_t fs_tss2_resmgr_tpm_layer = TSS2_RESMGR_TPM_RC_LAYER;
static const uint32_t fs_tss2_mu_bad_reference = TSS2_MU_RC_BAD_REFERENCE;
static const uint32_t fs_tpm_pt_lockout_counter = TPM2_PT_LOCKOUT_COUNTER;
static const uint32_t fs_tpm_pt_max_auth_fail = TPM2_PT_MAX_AUTH_FAIL;
static const uint32_t fs_tpm_pt_lockout_interval = TPM2_PT_LOCKOUT_INTERVAL;
static const uint32_t fs_tpm_pt_lockout_recovery = TPM2_PT_LOCKOUT_RECOVERY;
static const uint32_t fs_tpm_hr_transient = TPM2_HR_TRANSIENT;
static const uint32_t fs_tpm_hr_loaded_session = (uint32_t)TPM2_HT_LOADED_SESSION << TPM2_HR_SHIFT;
#endif
