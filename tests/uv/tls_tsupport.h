/* SPDX-License-Identifier: MIT */
/*
 * The certificates of the TLS tests, made with OpenSSL's API (EC P-256
 * keys, the X509 builder) into a temporary directory of their own: a test
 * CA, a CA that signed nothing used here, a server certificate for
 * localhost and 127.0.0.1, one for wrong.example, and a client
 * certificate, each leaf by the test CA. No key is kept in the tree.
 * make_certs() and remove_certs() are cmocka group setup and teardown.
 */
#ifndef FUTOIN_TLS_TSUPPORT_H
#define FUTOIN_TLS_TSUPPORT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- the test's certificates ---- */

static char g_dir[64];
static char g_ca[128];       /* the test CA */
static char g_other_ca[128]; /* a CA that signed nothing used here */
static char g_srv_crt[128];  /* localhost, 127.0.0.1; by the CA */
static char g_srv_key[128];
static char g_wrong_crt[128]; /* wrong.example; by the CA */
static char g_wrong_key[128];
static char g_cli_crt[128]; /* a client certificate by the CA */
static char g_cli_key[128];

static inline EVP_PKEY* new_key(void)
{
    EVP_PKEY* k = EVP_EC_gen("P-256");
    assert_non_null(k);
    return k;
}

static inline void add_ext(X509* x, X509V3_CTX* ctx, int nid, const char* value)
{
    X509_EXTENSION* e = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    assert_non_null(e);
    assert_int_equal(X509_add_ext(x, e, -1), 1);
    X509_EXTENSION_free(e);
}

/* A certificate for key: self-signed when issuer is NULL (a CA). */
static inline X509* new_cert(EVP_PKEY* key, const char* cn, X509* issuer, EVP_PKEY* issuer_key,
        const char* san)
{
    static long serial = 1;
    X509* x = X509_new();
    assert_non_null(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char*)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
    if (!issuer) {
        add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE");
        add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
        add_ext(x, &ctx, NID_subject_key_identifier, "hash");
    } else {
        add_ext(x, &ctx, NID_basic_constraints, "CA:FALSE");
        add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always");
    }
    if (san) {
        add_ext(x, &ctx, NID_subject_alt_name, san);
    }
    assert_true(X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) > 0);
    return x;
}

static inline void write_cert(const char* path, X509* x)
{
    FILE* f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_X509(f, x), 1);
    fclose(f);
}

static inline void write_key(const char* path, EVP_PKEY* k)
{
    FILE* f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
    fclose(f);
}

static inline void leaf(const char* crt, const char* key, const char* cn, X509* ca,
        EVP_PKEY* ca_key, const char* san)
{
    EVP_PKEY* k = new_key();
    X509* x = new_cert(k, cn, ca, ca_key, san);
    write_cert(crt, x);
    write_key(key, k);
    X509_free(x);
    EVP_PKEY_free(k);
}

static inline int make_certs(void** state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/futoin-tls-XXXXXX");
    if (!mkdtemp(g_dir)) {
        return -1;
    }
    snprintf(g_ca, sizeof(g_ca), "%s/ca.pem", g_dir);
    snprintf(g_other_ca, sizeof(g_other_ca), "%s/other-ca.pem", g_dir);
    snprintf(g_srv_crt, sizeof(g_srv_crt), "%s/srv.pem", g_dir);
    snprintf(g_srv_key, sizeof(g_srv_key), "%s/srv.key", g_dir);
    snprintf(g_wrong_crt, sizeof(g_wrong_crt), "%s/wrong.pem", g_dir);
    snprintf(g_wrong_key, sizeof(g_wrong_key), "%s/wrong.key", g_dir);
    snprintf(g_cli_crt, sizeof(g_cli_crt), "%s/cli.pem", g_dir);
    snprintf(g_cli_key, sizeof(g_cli_key), "%s/cli.key", g_dir);
    EVP_PKEY* ca_key = new_key();
    X509* ca = new_cert(ca_key, "futoin test CA", NULL, NULL, NULL);
    write_cert(g_ca, ca);
    EVP_PKEY* other_key = new_key();
    X509* other = new_cert(other_key, "futoin other CA", NULL, NULL, NULL);
    write_cert(g_other_ca, other);
    leaf(g_srv_crt, g_srv_key, "localhost", ca, ca_key, "DNS:localhost,IP:127.0.0.1");
    leaf(g_wrong_crt, g_wrong_key, "wrong.example", ca, ca_key, "DNS:wrong.example");
    leaf(g_cli_crt, g_cli_key, "futoin test client", ca, ca_key, NULL);
    X509_free(ca);
    X509_free(other);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(other_key);
    return 0;
}

static inline int remove_certs(void** state)
{
    (void)state;
    const char* files[] = { g_ca, g_other_ca, g_srv_crt, g_srv_key, g_wrong_crt, g_wrong_key,
        g_cli_crt, g_cli_key };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); ++i) {
        unlink(files[i]);
    }
    rmdir(g_dir);
    return 0;
}

#endif
