/* SPDX-License-Identifier: MIT */
/*
 * TLS over a stream with OpenSSL 3 and memory BIOs: OpenSSL never touches
 * the socket. The stream's reads put the ciphertext into the read BIO and
 * decrypt what they can into the stream's own receive buffer, so that the
 * read steps of uv_read.c work unchanged on the plain text; what OpenSSL
 * puts into the write BIO (records, alerts, handshake messages) goes out
 * with uv_try_write() and, for the rest, uv_write() requests of their own.
 *
 * The handshake is a step whose wait is owned by the connection's TLS
 * state: the stream's read callback drives SSL_do_handshake() and ends it.
 * A write step encrypts all of its data at once (in chunks of WRITE_CHUNK
 * bytes, one request each) and waits for the last request: requests
 * complete in order. A cancelled write leaves its records queued, as a
 * cancelled TCP write leaves its bytes with libuv.
 *
 * Without FUTOIN_UV_TLS (no OpenSSL at build time) the public functions
 * remain and report that TLS is missing.
 */
#include "uv_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(FUTOIN_UV_TLS)

#include <arpa/inet.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* Ciphertext read per libuv read callback: one full record and its header. */
#define TLS_CIPHER_BUF ((16u << 10) + 512u)
/* Plain text encrypted per write request. */
#define WRITE_CHUNK ((size_t)64u << 10)
#define TLS_REASON_SIZE 160

struct FutoInUvTls {
    SSL_CTX* ctx;
    unsigned flags;
    unsigned refs;
    uint8_t ca_set;        /* futoin_uv_tls_set_ca() succeeded */
    uint8_t default_paths; /* the system store was added (clients without a CA) */
    char err[288];
};

enum { HS_NONE = 0, HS_RUNNING, HS_DONE, HS_FAILED };

struct FutoInUvTlsConn {
    FutoInUvStream* s;
    FutoInUvTls* cfg;
    SSL* ssl;
    BIO* rbio; /* owned by ssl */
    BIO* wbio; /* owned by ssl */
    char* cbuf;
    FutoInAsyncSteps* hs_as; /* the pending handshake step */
    int tcp_err;             /* end or error of the ciphertext (libuv) */
    uint8_t hs_state;
    uint8_t tcp_eof;
    uint8_t notified; /* close_notify queued */
    char reason[TLS_REASON_SIZE];
};

typedef struct {
    uv_write_t req;
    FutoInAsyncSteps* as; /* NULL: no step waits for it (or cancelled) */
    char bytes[];
} TlsWriteOp;

/* ---- errors ---- */

/* Takes OpenSSL's error queue: the reason of its first entry (the cause)
 * into buf, and for a refused certificate why it was refused. Returns
 * UV_ENOMEM for an allocation failure, else UV_EPROTO. */
static int take_reason(SSL* ssl, char* buf, size_t size)
{
    unsigned long e = ERR_get_error();
    int err = UV_EPROTO;
    if (!e) {
        snprintf(buf, size, "protocol error");
    } else {
        const char* r = ERR_reason_error_string(e);
        if (ERR_GET_REASON(e) == ERR_R_MALLOC_FAILURE) {
            err = UV_ENOMEM;
        }
        if (r) {
            snprintf(buf, size, "%s", r);
        } else {
            snprintf(buf, size, "error %lx", e);
        }
        long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
        if (ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) == SSL_R_CERTIFICATE_VERIFY_FAILED
                && v != X509_V_OK) {
            size_t n = strlen(buf);
            snprintf(buf + n, size - n, ": %s", X509_verify_cert_error_string(v));
        }
    }
    ERR_clear_error();
    return err;
}

static int cfg_fail(FutoInUvTls* t, const char* what)
{
    char reason[TLS_REASON_SIZE];
    take_reason(NULL, reason, sizeof(reason));
    snprintf(t->err, sizeof(t->err), "%s: %s", what, reason);
    return UV_EPROTO;
}

/* ---- configurations ---- */

int futoin_uv_tls_available(void)
{
    return 1;
}

FutoInUvTls* futoin_uv_tls_new(unsigned flags, int* uv_error)
{
    int dummy;
    int* e = uv_error ? uv_error : &dummy;
    unsigned known = FUTOIN_UV_TLS_SERVER | FUTOIN_UV_TLS_CLIENT_CERT
            | FUTOIN_UV_TLS_CLIENT_CERT_REQUIRED;
    int server = (flags & FUTOIN_UV_TLS_SERVER) != 0;
    if ((flags & ~known) || (!server && (flags & ~FUTOIN_UV_TLS_SERVER))) {
        *e = UV_EINVAL;
        return NULL;
    }
    FutoInUvTls* t = calloc(1, sizeof(*t));
    if (!t) {
        *e = UV_ENOMEM;
        return NULL;
    }
    ERR_clear_error();
    t->ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (!t->ctx || !SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION)) {
        ERR_clear_error();
        SSL_CTX_free(t->ctx);
        free(t);
        *e = UV_ENOMEM;
        return NULL;
    }
    SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION);
    if (server) {
        static const unsigned char sid[] = "futoin_uv";
        SSL_CTX_set_session_id_context(t->ctx, sid, (unsigned)sizeof(sid) - 1);
        int mode = SSL_VERIFY_NONE;
        if (flags & (FUTOIN_UV_TLS_CLIENT_CERT | FUTOIN_UV_TLS_CLIENT_CERT_REQUIRED)) {
            mode = SSL_VERIFY_PEER;
        }
        if (flags & FUTOIN_UV_TLS_CLIENT_CERT_REQUIRED) {
            mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
        }
        SSL_CTX_set_verify(t->ctx, mode, NULL);
    } else {
        SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    }
    t->flags = flags;
    t->refs = 1;
    *e = 0;
    return t;
}

int futoin_uv_tls_set_ca(FutoInUvTls* t, const char* ca_file)
{
    if (!t || !ca_file) {
        return UV_EINVAL;
    }
    t->err[0] = '\0';
    ERR_clear_error();
    char what[96];
    snprintf(what, sizeof(what), "set_ca %s", ca_file);
    if (!SSL_CTX_load_verify_locations(t->ctx, ca_file, NULL)) {
        return cfg_fail(t, what);
    }
    if (t->flags & FUTOIN_UV_TLS_SERVER) {
        /* Names the acceptable issuers to clients (which certificate to
         * send); optional, so a failure here changes nothing else. */
        STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca_file);
        if (names) {
            SSL_CTX_set_client_CA_list(t->ctx, names);
        }
        ERR_clear_error();
    }
    t->ca_set = 1;
    return 0;
}

int futoin_uv_tls_set_cert(FutoInUvTls* t, const char* cert_file, const char* key_file)
{
    if (!t || !cert_file || !key_file) {
        return UV_EINVAL;
    }
    t->err[0] = '\0';
    ERR_clear_error();
    char what[96];
    snprintf(what, sizeof(what), "set_cert %s", cert_file);
    if (!SSL_CTX_use_certificate_chain_file(t->ctx, cert_file)) {
        return cfg_fail(t, what);
    }
    snprintf(what, sizeof(what), "set_cert %s", key_file);
    if (!SSL_CTX_use_PrivateKey_file(t->ctx, key_file, SSL_FILETYPE_PEM)
            || !SSL_CTX_check_private_key(t->ctx)) {
        return cfg_fail(t, what);
    }
    return 0;
}

const char* futoin_uv_tls_last_error(const FutoInUvTls* t)
{
    return t ? t->err : "";
}

void* futoin_uv_tls_ssl_ctx(FutoInUvTls* t)
{
    return t ? t->ctx : NULL;
}

FutoInUvTls* futoin_uv_tls_ref(FutoInUvTls* t)
{
    if (t) {
        ++t->refs;
    }
    return t;
}

void futoin_uv_tls_release(FutoInUvTls* t)
{
    if (!t || --t->refs > 0) {
        return;
    }
    SSL_CTX_free(t->ctx);
    free(t);
}

/* ---- sending what OpenSSL wrote ---- */

static void on_tls_written(uv_write_t* req, int status)
{
    TlsWriteOp* op = req->data;
    if (op->as) {
        if (status < 0) {
            futoin__uv_fail_owned(op->as, op, FUTOIN_COMM_ERROR, status, "write");
        } else {
            futoin_owned_success(op->as, op, NULL);
        }
    }
    free(op);
}

/* Sends the write BIO's bytes: what the kernel takes now, the rest in a
 * request of its own. Returns that request (NULL when none was needed or
 * on failure: *err then holds the libuv error). The BIO is empty after. */
static TlsWriteOp* flush_out(FutoInUvStream* s, int* err)
{
    FutoInUvTlsConn* c = s->tls;
    char* data = NULL;
    long n = BIO_get_mem_data(c->wbio, &data);
    *err = 0;
    if (n <= 0) {
        return NULL;
    }
    uv_stream_t* h = (uv_stream_t*)&s->tcp;
    if (uv_is_closing((uv_handle_t*)h)) {
        (void)BIO_reset(c->wbio);
        *err = UV_EBADF;
        return NULL;
    }
    size_t len = (size_t)n;
    size_t done = 0;
    if (uv_stream_get_write_queue_size(h) == 0) {
        uv_buf_t b = uv_buf_init(data, (unsigned)len);
        int w = uv_try_write(h, &b, 1);
        if (w >= 0) {
            done = (size_t)w;
        } else if (w != UV_EAGAIN) {
            (void)BIO_reset(c->wbio);
            *err = w;
            return NULL;
        }
    }
    if (done == len) {
        (void)BIO_reset(c->wbio);
        return NULL;
    }
    TlsWriteOp* op = malloc(sizeof(*op) + (len - done));
    if (!op) {
        (void)BIO_reset(c->wbio);
        *err = UV_ENOMEM;
        return NULL;
    }
    memcpy(op->bytes, data + done, len - done);
    (void)BIO_reset(c->wbio);
    op->req.data = op;
    op->as = NULL;
    uv_buf_t b = uv_buf_init(op->bytes, (unsigned)(len - done));
    int e = uv_write(&op->req, h, &b, 1, on_tls_written);
    if (e) {
        free(op);
        *err = e;
        return NULL;
    }
    return op;
}

/* Flushes what no step waits for (handshake messages, alerts). */
static void flush_quiet(FutoInUvStream* s)
{
    int err;
    flush_out(s, &err);
}

/* ---- the handshake ---- */

typedef struct {
    StreamParams base;
    FutoInUvTls* t;
    char host[];
} HandshakeParams;

static void handshake_params_release(void* data)
{
    HandshakeParams* p = data;
    futoin_uv_tls_release(p->t);
    futoin__uv_params_release(p);
}

enum { STEP_WAIT = 0, STEP_DONE, STEP_FAILED };

/* One round of SSL_do_handshake(): sends what it wrote. On STEP_FAILED,
 * c->reason says why and *err is the libuv error to report. */
static int handshake_round(FutoInUvStream* s, int* err)
{
    FutoInUvTlsConn* c = s->tls;
    ERR_clear_error();
    int r = SSL_do_handshake(c->ssl);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(c->ssl, r);
    if (r != 1 && e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
        *err = take_reason(c->ssl, c->reason, sizeof(c->reason));
    }
    /* Handshake messages, or the alert that tells the peer why it failed. */
    flush_quiet(s);
    if (r == 1) {
        c->hs_state = HS_DONE;
        return STEP_DONE;
    }
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        if (c->tcp_eof || c->tcp_err) {
            *err = c->tcp_eof ? UV_EOF : c->tcp_err;
            snprintf(c->reason, sizeof(c->reason), "%s",
                    c->tcp_eof ? "connection closed by peer" : "read");
            c->hs_state = HS_FAILED;
            return STEP_FAILED;
        }
        return STEP_WAIT;
    }
    c->hs_state = HS_FAILED;
    return STEP_FAILED;
}

/* Decrypts what OpenSSL can give into the stream's receive buffer. */
static void decrypt(FutoInUvStream* s)
{
    FutoInUvTlsConn* c = s->tls;
    if (c->hs_state != HS_DONE || s->read_error || s->eof) {
        return;
    }
    for (;;) {
        uv_buf_t room;
        futoin__uv_stream_room(s, &room);
        if (!room.base || room.len == 0) {
            /* A spent budget or no memory: the rest stays with OpenSSL
             * for the next read step (futoin__uv_tls_pump()). */
            futoin__uv_stream_stop_reading(s);
            if (s->budget_blocked) {
                s->budget_blocked = 0;
                futoin__uv_stream_fail_reader(s, UV_ENOBUFS, "read: input budget spent");
            } else {
                s->alloc_failed = 0;
                futoin__uv_stream_fail_reader(s, UV_ENOMEM, "read");
            }
            break;
        }
        size_t got = 0;
        ERR_clear_error();
        if (SSL_read_ex(c->ssl, room.base, room.len, &got)) {
            s->len += got;
            continue;
        }
        int e = SSL_get_error(c->ssl, 0);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            ERR_clear_error();
            if (c->tcp_eof) {
                s->eof = 1;
            } else if (c->tcp_err) {
                s->read_error = c->tcp_err;
            }
        } else if (e == SSL_ERROR_ZERO_RETURN) {
            /* close_notify: the peer's end of stream. */
            ERR_clear_error();
            s->eof = 1;
            futoin__uv_stream_stop_reading(s);
        } else {
            s->read_error = take_reason(c->ssl, c->reason, sizeof(c->reason));
            futoin__uv_stream_stop_reading(s);
        }
        break;
    }
    /* Reading may have produced output (an alert, a key update reply). */
    flush_quiet(s);
}

/* Ends the pending handshake step (if any) after a round. */
static void handshake_progress(FutoInUvStream* s)
{
    FutoInUvTlsConn* c = s->tls;
    int err = 0;
    int r = handshake_round(s, &err);
    if (r == STEP_WAIT) {
        return;
    }
    FutoInAsyncSteps* as = c->hs_as;
    c->hs_as = NULL;
    if (r == STEP_DONE) {
        decrypt(s);
        if (as) {
            futoin_owned_success(as, c, NULL);
        }
        return;
    }
    if (as) {
        futoin__uv_failf_owned(as, c, FUTOIN_COMM_ERROR, err, "tls_handshake %s: %s",
                futoin__uv_stream_peer(s), c->reason);
    }
    futoin__uv_stream_close(s);
}

static void handshake_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    FutoInUvTlsConn* c = data;
    c->hs_as = NULL;
    /* Half a handshake leaves nothing usable. */
    futoin__uv_stream_close(c->s);
}

/* Whether host is a numeric IPv4 or IPv6 address. */
static int is_ip(const char* host)
{
    unsigned char a[16];
    return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

/* Creates the TLS state of s: 0, or a libuv error. */
static int conn_new(FutoInUvStream* s, FutoInUvTls* t, const char* host)
{
    FutoInUvTlsConn* c = calloc(1, sizeof(*c));
    if (!c) {
        return UV_ENOMEM;
    }
    ERR_clear_error();
    c->ssl = SSL_new(t->ctx);
    BIO* rbio = BIO_new(BIO_s_mem());
    BIO* wbio = BIO_new(BIO_s_mem());
    if (!c->ssl || !rbio || !wbio) {
        BIO_free(rbio);
        BIO_free(wbio);
        goto nomem;
    }
    /* An empty read BIO means "more to come", not an end. */
    BIO_set_mem_eof_return(rbio, -1);
    SSL_set_bio(c->ssl, rbio, wbio);
    c->rbio = rbio;
    c->wbio = wbio;
    if (t->flags & FUTOIN_UV_TLS_SERVER) {
        SSL_set_accept_state(c->ssl);
    } else {
        SSL_set_connect_state(c->ssl);
        if (host && *host) {
            int ok;
            if (is_ip(host)) {
                ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host);
            } else {
                ok = SSL_set_tlsext_host_name(c->ssl, host) && SSL_set1_host(c->ssl, host);
            }
            if (!ok) {
                goto nomem;
            }
        }
    }
    /* Bytes read ahead before the handshake are its first ciphertext. */
    size_t ahead = s->len - s->off;
    if (ahead) {
        if (BIO_write(rbio, s->buf + s->off, (int)ahead) != (int)ahead) {
            goto nomem;
        }
        s->off = s->len = 0;
        s->scanned = 0;
    }
    c->s = s;
    c->cfg = futoin_uv_tls_ref(t);
    s->tls = c;
    return 0;
nomem:
    ERR_clear_error();
    SSL_free(c->ssl);
    free(c);
    return UV_ENOMEM;
}

static void handshake_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    HandshakeParams* p = data;
    FutoInUvStream* s = p->base.s;
    FutoInUvTls* t = p->t;
    if (s->closing) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, UV_EBADF, "tls_handshake: stream closed");
        return;
    }
    if (s->tls) {
        futoin__uv_failf(as, FUTOIN_COMM_ERROR, UV_EBUSY, "tls_handshake %s: already TLS",
                futoin__uv_stream_peer(s));
        return;
    }
    if ((t->flags & FUTOIN_UV_TLS_SERVER) && !SSL_CTX_get0_certificate(t->ctx)) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_EINVAL,
                "EINVAL: futoin_uv_tls_handshake: server configuration without a certificate");
        return;
    }
    if (!(t->flags & FUTOIN_UV_TLS_SERVER) && !t->ca_set && !t->default_paths) {
        /* No CA given: the system's store. */
        ERR_clear_error();
        SSL_CTX_set_default_verify_paths(t->ctx);
        ERR_clear_error();
        t->default_paths = 1;
    }
    int err = conn_new(s, t, p->host);
    if (err) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, err, "ENOMEM: tls_handshake: out of memory");
        return;
    }
    FutoInUvTlsConn* c = s->tls;
    c->hs_state = HS_RUNNING;
    int r = handshake_round(s, &err);
    if (r == STEP_DONE) {
        decrypt(s);
        futoin_success(as);
        return;
    }
    if (r == STEP_FAILED) {
        futoin__uv_failf(as, FUTOIN_COMM_ERROR, err, "tls_handshake %s: %s",
                futoin__uv_stream_peer(s), c->reason);
        futoin__uv_stream_close(s);
        return;
    }
    err = futoin__uv_stream_start_reading(s);
    if (err) {
        futoin__uv_failf(as, FUTOIN_COMM_ERROR, err, "tls_handshake %s", futoin__uv_stream_peer(s));
        futoin__uv_stream_close(s);
        return;
    }
    c->hs_as = as;
    futoin_wait_owned(as, handshake_cancel, c);
    futoin__uv_wait_info(as, "tls_handshake", futoin__uv_stream_peer(s));
}

void futoin_uv_tls_handshake(FutoInAsyncSteps* as, FutoInUvStream* s, FutoInUvTls* t,
        const char* host)
{
    if (!futoin__uv_stream_ok(as, "futoin_uv_tls_handshake", s)) {
        return;
    }
    if (!t) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_tls_handshake: t is NULL");
        return;
    }
    size_t hlen = host ? strlen(host) : 0;
    HandshakeParams* p = futoin__uv_add_step(as, handshake_start,
            sizeof(HandshakeParams) + hlen + 1, handshake_params_release,
            "tls_handshake: out of memory");
    if (!p) {
        return;
    }
    p->base.s = futoin_uv_stream_ref(s);
    p->t = futoin_uv_tls_ref(t);
    if (hlen) {
        memcpy(p->host, host, hlen + 1);
    }
}

/* ---- the stream's hooks ---- */

void futoin__uv_tls_alloc(FutoInUvStream* s, uv_buf_t* buf)
{
    FutoInUvTlsConn* c = s->tls;
    if (!c->cbuf) {
        c->cbuf = malloc(TLS_CIPHER_BUF);
        if (!c->cbuf) {
            s->alloc_failed = 1;
            *buf = uv_buf_init(NULL, 0);
            return;
        }
    }
    *buf = uv_buf_init(c->cbuf, TLS_CIPHER_BUF);
}

void futoin__uv_tls_read(FutoInUvStream* s, ssize_t nread, const uv_buf_t* buf)
{
    FutoInUvTlsConn* c = s->tls;
    if (nread > 0) {
        ERR_clear_error();
        if (BIO_write(c->rbio, buf->base, (int)nread) != (int)nread) {
            ERR_clear_error();
            /* Ciphertext lost: the connection cannot go on. */
            snprintf(c->reason, sizeof(c->reason), "out of memory");
            c->tcp_err = UV_ENOMEM;
            futoin__uv_stream_stop_reading(s);
        }
    } else if (nread == UV_ENOBUFS && s->alloc_failed) {
        /* No ciphertext buffer: not sticky, as for a plain stream. */
        s->alloc_failed = 0;
        futoin__uv_stream_stop_reading(s);
        futoin__uv_stream_fail_reader(s, UV_ENOMEM, "read");
        if (c->hs_as) {
            FutoInAsyncSteps* as = c->hs_as;
            c->hs_as = NULL;
            futoin__uv_fail_owned(as, c, FUTOIN_COMM_ERROR, UV_ENOMEM, "tls_handshake");
            futoin__uv_stream_close(s);
        }
        return;
    } else if (nread < 0) {
        if (nread == UV_EOF) {
            c->tcp_eof = 1;
        } else {
            c->tcp_err = (int)nread;
        }
        futoin__uv_stream_stop_reading(s);
    }
    if (c->hs_state == HS_RUNNING) {
        handshake_progress(s);
        if (c->hs_state != HS_DONE || s->closing) {
            return;
        }
    } else {
        decrypt(s);
    }
    futoin__uv_stream_input_done(s);
}

void futoin__uv_tls_pump(FutoInUvStream* s)
{
    decrypt(s);
}

/* A write on a stream whose TLS cannot carry it: 0, or the error. */
static int write_refused(FutoInUvStream* s, const char** what)
{
    FutoInUvTlsConn* c = s->tls;
    if (c->hs_state == HS_DONE && !(s->read_error == UV_EPROTO)) {
        return 0;
    }
    if (c->hs_state == HS_DONE || c->hs_state == HS_FAILED) {
        *what = c->reason;
        return UV_EPROTO;
    }
    *what = "handshake not complete";
    return UV_ENOTCONN;
}

/* Encrypts and sends len bytes; returns the request carrying the last of
 * them (NULL: all sent at once), or NULL with *err set. */
static TlsWriteOp* encrypt_send(FutoInUvStream* s, const char* data, size_t len, int* err,
        char* reason, size_t rsize)
{
    FutoInUvTlsConn* c = s->tls;
    TlsWriteOp* last = NULL;
    size_t off = 0;
    *err = 0;
    while (off < len) {
        size_t chunk = len - off < WRITE_CHUNK ? len - off : WRITE_CHUNK;
        size_t w = 0;
        ERR_clear_error();
        if (!SSL_write_ex(c->ssl, data + off, chunk, &w)) {
            *err = take_reason(c->ssl, reason, rsize);
            snprintf(c->reason, sizeof(c->reason), "%s", reason);
            return NULL;
        }
        off += w;
        TlsWriteOp* op = flush_out(s, err);
        if (*err) {
            snprintf(reason, rsize, "%s", "");
            return NULL;
        }
        if (op) {
            last = op;
        }
    }
    return last;
}

static void tls_write_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ((TlsWriteOp*)data)->as = NULL;
}

void futoin__uv_tls_write(FutoInAsyncSteps* as, FutoInUvStream* s, const char* data, size_t len)
{
    const char* why = NULL;
    int err = write_refused(s, &why);
    if (err) {
        futoin__uv_failf(as, FUTOIN_COMM_ERROR, err, "write: tls: %s", why);
        return;
    }
    char reason[TLS_REASON_SIZE];
    TlsWriteOp* last = encrypt_send(s, data, len, &err, reason, sizeof(reason));
    if (err) {
        if (reason[0]) {
            futoin__uv_failf(as, FUTOIN_COMM_ERROR, err, "write: tls: %s", reason);
        } else {
            futoin__uv_fail(as, FUTOIN_COMM_ERROR, err, "write");
        }
        return;
    }
    if (!last) {
        futoin_success(as);
        return;
    }
    last->as = as;
    futoin_wait_owned(as, tls_write_cancel, last);
    futoin__uv_wait_info(as, "write", futoin__uv_stream_peer(s));
}

long futoin__uv_tls_try_write(FutoInUvStream* s, const char* data, size_t len)
{
    const char* why = NULL;
    int err = write_refused(s, &why);
    if (err) {
        return err;
    }
    if (len == 0 || uv_stream_get_write_queue_size((uv_stream_t*)&s->tcp) > 0) {
        return 0;
    }
    if (len > FUTOIN_UV_MAX_IO_LEN) {
        len = FUTOIN_UV_MAX_IO_LEN;
    }
    char reason[TLS_REASON_SIZE];
    encrypt_send(s, data, len, &err, reason, sizeof(reason));
    return err ? err : (long)len;
}

void futoin__uv_tls_close_notify(FutoInUvStream* s)
{
    FutoInUvTlsConn* c = s->tls;
    if (c->notified || c->hs_state != HS_DONE) {
        return;
    }
    c->notified = 1;
    ERR_clear_error();
    SSL_shutdown(c->ssl);
    ERR_clear_error();
    flush_quiet(s);
}

void futoin__uv_tls_closing(FutoInUvStream* s)
{
    FutoInUvTlsConn* c = s->tls;
    FutoInAsyncSteps* as = c->hs_as;
    if (as) {
        c->hs_as = NULL;
        futoin__uv_fail_owned(as, c, FUTOIN_COMM_ERROR, UV_ECANCELED,
                "tls_handshake: stream closed");
    }
}

void futoin__uv_tls_free(FutoInUvStream* s)
{
    FutoInUvTlsConn* c = s->tls;
    s->tls = NULL;
    SSL_free(c->ssl);
    free(c->cbuf);
    futoin_uv_tls_release(c->cfg);
    free(c);
}

const char* futoin__uv_tls_reason(const FutoInUvStream* s)
{
    return s->tls ? s->tls->reason : "";
}

void* futoin_uv_stream_ssl(FutoInUvStream* s)
{
    return s && s->tls ? s->tls->ssl : NULL;
}

#else /* !FUTOIN_UV_TLS: the API without OpenSSL */

int futoin_uv_tls_available(void)
{
    return 0;
}

FutoInUvTls* futoin_uv_tls_new(unsigned flags, int* uv_error)
{
    (void)flags;
    if (uv_error) {
        *uv_error = UV_ENOTSUP;
    }
    return NULL;
}

int futoin_uv_tls_set_ca(FutoInUvTls* t, const char* ca_file)
{
    (void)t;
    (void)ca_file;
    return UV_ENOTSUP;
}

int futoin_uv_tls_set_cert(FutoInUvTls* t, const char* cert_file, const char* key_file)
{
    (void)t;
    (void)cert_file;
    (void)key_file;
    return UV_ENOTSUP;
}

const char* futoin_uv_tls_last_error(const FutoInUvTls* t)
{
    (void)t;
    return "";
}

void* futoin_uv_tls_ssl_ctx(FutoInUvTls* t)
{
    (void)t;
    return NULL;
}

FutoInUvTls* futoin_uv_tls_ref(FutoInUvTls* t)
{
    return t;
}

void futoin_uv_tls_release(FutoInUvTls* t)
{
    (void)t;
}

void futoin_uv_tls_handshake(FutoInAsyncSteps* as, FutoInUvStream* s, FutoInUvTls* t,
        const char* host)
{
    (void)s;
    (void)t;
    (void)host;
    futoin__uv_add_fail(as, "ENOTSUP: futoin_uv_tls_handshake: built without TLS");
}

void* futoin_uv_stream_ssl(FutoInUvStream* s)
{
    (void)s;
    return NULL;
}

/* Never reached: no stream has TLS state without OpenSSL. */
void futoin__uv_tls_alloc(FutoInUvStream* s, uv_buf_t* buf)
{
    futoin__uv_stream_room(s, buf);
}

void futoin__uv_tls_read(FutoInUvStream* s, ssize_t nread, const uv_buf_t* buf)
{
    (void)nread;
    (void)buf;
    futoin__uv_stream_input_done(s);
}

void futoin__uv_tls_pump(FutoInUvStream* s)
{
    (void)s;
}

void futoin__uv_tls_write(FutoInAsyncSteps* as, FutoInUvStream* s, const char* data, size_t len)
{
    (void)s;
    (void)data;
    (void)len;
    futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOTSUP, "ENOTSUP: write: built without TLS");
}

long futoin__uv_tls_try_write(FutoInUvStream* s, const char* data, size_t len)
{
    (void)s;
    (void)data;
    (void)len;
    return UV_ENOTSUP;
}

void futoin__uv_tls_close_notify(FutoInUvStream* s)
{
    (void)s;
}

void futoin__uv_tls_closing(FutoInUvStream* s)
{
    (void)s;
}

void futoin__uv_tls_free(FutoInUvStream* s)
{
    s->tls = NULL;
}

const char* futoin__uv_tls_reason(const FutoInUvStream* s)
{
    (void)s;
    return "";
}

#endif

int futoin_uv_stream_is_tls(const FutoInUvStream* s)
{
    return s && s->tls ? 1 : 0;
}
