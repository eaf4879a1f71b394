/* SPDX-License-Identifier: MIT */
/*
 * TLS streams (futoin_uv_tls_handshake()) over loopback TCP: a test CA,
 * server, wrong-host and client certificates made by the test itself with
 * OpenSSL (EC P-256 keys) into a temporary directory; then a server and a
 * client of the backend in one loop echo a line both ways and end with
 * close_notify; an unknown CA, a wrong host name, a missing client
 * certificate fail their handshakes with OpenSSL's reasons; a silent peer
 * times the handshake out; a peer that stalls in the middle of a record
 * times the read out; a TLS 1.2 peer that asks for renegotiation is
 * refused; a large write is cancelled while it is queued; the input
 * budget counts the decrypted text; a socketpair's ends work as TCP
 * connections do; plain HTTP sent to a TLS server is refused. The peers that
 * misbehave are blocking sockets in a thread (uv_tsupport.h). After each
 * test futoin_uv_free() must find no handle left open.
 */
#include "uv_tsupport.h"

#include "tls_tsupport.h"

/* A server configuration with crt/key, or a client one trusting ca. */
static FutoInUvTls* server_tls(const char* crt, const char* key, unsigned flags)
{
    int err = -1;
    FutoInUvTls* t = futoin_uv_tls_new(FUTOIN_UV_TLS_SERVER | flags, &err);
    assert_non_null(t);
    assert_int_equal(err, 0);
    assert_int_equal(futoin_uv_tls_set_cert(t, crt, key), 0);
    if (flags) {
        assert_int_equal(futoin_uv_tls_set_ca(t, g_ca), 0);
    }
    return t;
}

static FutoInUvTls* client_tls(const char* ca)
{
    int err = -1;
    FutoInUvTls* t = futoin_uv_tls_new(0, &err);
    assert_non_null(t);
    assert_int_equal(err, 0);
    assert_int_equal(futoin_uv_tls_set_ca(t, ca), 0);
    return t;
}

/* ---- a server and a client of the backend ---- */

typedef struct Side {
    FutoInUvServer* srv;
    unsigned port;
    FutoInUvTls* tls;
    const char* host; /* the client's name to check */
    FutoInUvStream* s;
    int handshaken;
    char line[64];
    char version[16];
    char peer_cn[64];
    int failed;
    char code[32];
    char info[200];
    int num;
    int done;
} Side;

static void eh_side(FutoInAsyncSteps* as, void* data, const char* code)
{
    Side* sd = data;
    sd->failed = 1;
    snprintf(sd->code, sizeof(sd->code), "%s", code);
    snprintf(sd->info, sizeof(sd->info), "%s", futoin_error_info(as));
    sd->num = futoin_uv_errno(as);
    /* The peer must see the end rather than wait for it. */
    futoin_uv_stream_close(sd->s);
}

static void keep_stream(Side* sd, const FutoInArgs* args)
{
    sd->s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    assert_non_null(sd->s);
}

static void note_handshake(Side* sd)
{
    sd->handshaken = 1;
    SSL* ssl = futoin_uv_stream_ssl(sd->s);
    assert_non_null(ssl);
    assert_true(futoin_uv_stream_is_tls(sd->s));
    snprintf(sd->version, sizeof(sd->version), "%s", SSL_get_version(ssl));
    X509* pc = SSL_get0_peer_certificate(ssl);
    if (pc) {
        X509_NAME_get_text_by_NID(X509_get_subject_name(pc), NID_commonName, sd->peer_cn,
                (int)sizeof(sd->peer_cn));
    }
}

static void srv_accept(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_accept(as, ((Side*)data)->srv);
}

static void srv_handshake(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Side* sd = data;
    keep_stream(sd, args);
    futoin_uv_tls_handshake(as, sd->s, sd->tls, NULL);
}

static void srv_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Side* sd = data;
    note_handshake(sd);
    futoin_uv_read_line(as, sd->s, 0);
}

static void srv_answer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Side* sd = data;
    snprintf(sd->line, sizeof(sd->line), "%s", futoin_arg_cstr(args, 0, ""));
    char buf[80];
    int n = snprintf(buf, sizeof(buf), "echo:%s\n", sd->line);
    futoin_uv_write(as, sd->s, buf, (size_t)n);
    /* The client's close_notify ends the stream. */
    futoin_uv_read_line(as, sd->s, 0);
}

static void srv_steps(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, srv_accept, NULL, data);
    futoin_add(as, srv_handshake, NULL, data);
    futoin_add(as, srv_read, NULL, data);
    futoin_add(as, srv_answer, NULL, data);
}

static void cli_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_tcp_connect(as, "127.0.0.1", ((Side*)data)->port);
}

static void cli_handshake(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Side* sd = data;
    keep_stream(sd, args);
    futoin_uv_tls_handshake(as, sd->s, sd->tls, sd->host);
}

static void cli_send(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Side* sd = data;
    note_handshake(sd);
    futoin_uv_write(as, sd->s, "hello\n", 6);
    futoin_uv_read_line(as, sd->s, 0);
}

static void cli_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Side* sd = data;
    snprintf(sd->line, sizeof(sd->line), "%s", futoin_arg_cstr(args, 0, ""));
    futoin_uv_close(as, sd->s, 1); /* close_notify, FIN, close */
    sd->s = NULL;
}

static void cli_steps(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, cli_connect, NULL, data);
    futoin_add(as, cli_handshake, NULL, data);
    futoin_add(as, cli_send, NULL, data);
    futoin_add(as, cli_got, NULL, data);
}

static void side_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ((Side*)data)->done = 1;
}

static void side_end(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)code;
    ((Side*)data)->done = 1;
}

/* Runs a server of srv_tls and a client of cli_tls (checking host) until
 * both ended, then releases everything but the results. */
static void run_pair(Side* srv, Side* cli, FutoInUvTls* srv_tls, FutoInUvTls* cli_tls,
        const char* host)
{
    memset(srv, 0, sizeof(*srv));
    memset(cli, 0, sizeof(*cli));
    int err = 0;
    srv->srv = futoin_uv_server_new(g_uv, "127.0.0.1", 0, 0, &err);
    assert_non_null(srv->srv);
    srv->tls = srv_tls;
    cli->tls = cli_tls;
    cli->host = host;
    cli->port = futoin_uv_server_port(srv->srv);
    FutoInAsyncSteps* rs = uv_new_root();
    FutoInAsyncSteps* rc = uv_new_root();
    futoin_add(rs, srv_steps, eh_side, srv);
    futoin_add(rs, side_done, NULL, srv);
    futoin_add(rc, cli_steps, eh_side, cli);
    futoin_add(rc, side_done, NULL, cli);
    futoin_execute(rs, side_end, srv);
    futoin_execute(rc, side_end, cli);
    assert_true(run_until(&cli->done, scaled_ms(10000)));
    assert_true(run_until(&srv->done, scaled_ms(10000)));
    futoin_asyncsteps_free(rs);
    futoin_asyncsteps_free(rc);
    futoin_uv_stream_release(srv->s);
    futoin_uv_stream_release(cli->s);
    srv->s = cli->s = NULL;
    futoin_uv_server_release(srv->srv);
    futoin_uv_tls_release(srv_tls);
    futoin_uv_tls_release(cli_tls);
    run_for(10);
}

static void test_tls_echo_and_close_notify(void** state)
{
    (void)state;
    Side srv;
    Side cli;
    run_pair(&srv, &cli, server_tls(g_srv_crt, g_srv_key, 0), client_tls(g_ca), "localhost");
    assert_int_equal(cli.failed, 0);
    assert_true(cli.handshaken);
    assert_string_equal(cli.version, "TLSv1.3");
    assert_string_equal(cli.peer_cn, "localhost");
    assert_string_equal(cli.line, "echo:hello");
    assert_string_equal(srv.line, "hello");
    assert_string_equal(srv.peer_cn, ""); /* no client certificate asked */
    /* The close_notify of the client's graceful close: the server's end of
     * stream. */
    assert_int_equal(srv.failed, 1);
    assert_string_equal(srv.code, FUTOIN_COMM_ERROR);
    assert_string_equal(srv.info, "EOF: read: connection closed by peer");
    assert_int_equal(srv.num, UV_EOF);
    assert_int_equal(g_misuse, 0);
}

/* A name given as an IP address is checked against the IP SAN. */
static void test_tls_ip_host(void** state)
{
    (void)state;
    Side srv;
    Side cli;
    run_pair(&srv, &cli, server_tls(g_srv_crt, g_srv_key, 0), client_tls(g_ca), "127.0.0.1");
    assert_int_equal(cli.failed, 0);
    assert_string_equal(cli.line, "echo:hello");
}

static void test_tls_unknown_ca(void** state)
{
    (void)state;
    Side srv;
    Side cli;
    run_pair(&srv, &cli, server_tls(g_srv_crt, g_srv_key, 0), client_tls(g_other_ca), "localhost");
    assert_int_equal(cli.failed, 1);
    assert_false(cli.handshaken);
    assert_string_equal(cli.code, FUTOIN_COMM_ERROR);
    assert_int_equal(cli.num, UV_EPROTO);
    char want[160];
    snprintf(want, sizeof(want),
            "EPROTO: tls_handshake 127.0.0.1:%u: certificate verify failed: unable to get local "
            "issuer certificate",
            cli.port);
    assert_string_equal(cli.info, want);
    /* The client's alert tells the server why. */
    assert_int_equal(srv.failed, 1);
    assert_string_equal(srv.code, FUTOIN_COMM_ERROR);
    assert_non_null(strstr(srv.info, "EPROTO: tls_handshake "));
    assert_non_null(strstr(srv.info, "alert unknown ca"));
}

static void test_tls_wrong_host(void** state)
{
    (void)state;
    Side srv;
    Side cli;
    run_pair(&srv, &cli, server_tls(g_wrong_crt, g_wrong_key, 0), client_tls(g_ca), "localhost");
    assert_int_equal(cli.failed, 1);
    assert_string_equal(cli.code, FUTOIN_COMM_ERROR);
    char want[160];
    snprintf(want, sizeof(want),
            "EPROTO: tls_handshake 127.0.0.1:%u: certificate verify failed: hostname mismatch",
            cli.port);
    assert_string_equal(cli.info, want);
    assert_int_equal(srv.failed, 1);
}

/* Any connected stream: the two ends of a socketpair(2), wrapped with
 * futoin_uv_pipe_open(), handshake and echo as TCP connections do. */
static void sp_handshake(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Side* sd = data;
    futoin_uv_tls_handshake(as, sd->s, sd->tls, sd->host);
}

static void test_tls_over_socketpair(void** state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    Side srv;
    Side cli;
    memset(&srv, 0, sizeof(srv));
    memset(&cli, 0, sizeof(cli));
    int err = 0;
    srv.s = futoin_uv_pipe_open(g_uv, sv[0], &err);
    cli.s = futoin_uv_pipe_open(g_uv, sv[1], &err);
    assert_non_null(srv.s);
    assert_non_null(cli.s);
    srv.tls = server_tls(g_srv_crt, g_srv_key, 0);
    cli.tls = client_tls(g_ca);
    cli.host = "localhost";
    FutoInAsyncSteps* rs = uv_new_root();
    FutoInAsyncSteps* rc = uv_new_root();
    futoin_add(rs, sp_handshake, eh_side, &srv);
    futoin_add(rs, srv_read, eh_side, &srv);
    futoin_add(rs, srv_answer, eh_side, &srv);
    futoin_add(rs, side_done, NULL, &srv);
    futoin_add(rc, sp_handshake, eh_side, &cli);
    futoin_add(rc, cli_send, eh_side, &cli);
    futoin_add(rc, cli_got, eh_side, &cli);
    futoin_add(rc, side_done, NULL, &cli);
    futoin_execute(rs, side_end, &srv);
    futoin_execute(rc, side_end, &cli);
    assert_true(run_until(&cli.done, scaled_ms(10000)));
    assert_true(run_until(&srv.done, scaled_ms(10000)));
    assert_int_equal(cli.failed, 0);
    assert_string_equal(cli.line, "echo:hello");
    assert_string_equal(cli.peer_cn, "localhost");
    assert_string_equal(srv.line, "hello");
    /* The client's graceful close: close_notify, the server's end. */
    assert_string_equal(srv.info, "EOF: read: connection closed by peer");
    futoin_asyncsteps_free(rs);
    futoin_asyncsteps_free(rc);
    futoin_uv_stream_release(srv.s);
    futoin_uv_tls_release(srv.tls);
    futoin_uv_tls_release(cli.tls);
    run_for(10);
    assert_int_equal(g_misuse, 0);
}

/* A client certificate, required by the server: given, it is verified and
 * seen; absent, the server refuses the handshake, and the client (whose
 * TLS 1.3 handshake ended first) learns it on its next read. */
static FutoInUvTls* client_with_cert(void)
{
    FutoInUvTls* t = client_tls(g_ca);
    assert_int_equal(futoin_uv_tls_set_cert(t, g_cli_crt, g_cli_key), 0);
    return t;
}

static void test_tls_client_cert(void** state)
{
    (void)state;
    Side srv;
    Side cli;
    run_pair(&srv, &cli, server_tls(g_srv_crt, g_srv_key, FUTOIN_UV_TLS_CLIENT_CERT_REQUIRED),
            client_with_cert(), "localhost");
    assert_int_equal(cli.failed, 0);
    assert_string_equal(cli.line, "echo:hello");
    assert_string_equal(srv.peer_cn, "futoin test client");

    run_pair(&srv, &cli, server_tls(g_srv_crt, g_srv_key, FUTOIN_UV_TLS_CLIENT_CERT_REQUIRED),
            client_tls(g_ca), "localhost");
    assert_int_equal(srv.failed, 1);
    assert_false(srv.handshaken);
    assert_string_equal(srv.code, FUTOIN_COMM_ERROR);
    assert_non_null(strstr(srv.info, ": peer did not return a certificate"));
    assert_int_equal(cli.failed, 1);
    assert_true(cli.handshaken);
    assert_string_equal(cli.code, FUTOIN_COMM_ERROR);
    assert_string_equal(cli.info, "EPROTO: read: tls: tlsv13 alert certificate required");
}

/* ---- peers that misbehave ---- */

typedef struct {
    FutoInUvTls* tls;
    unsigned port;
    FutoInUvStream* s;
    uint32_t timeout_ms;
    int step; /* which step timed out: 1 handshake, 2 read, 3 write */
    size_t big;
    char* big_data;
    Outcome o;
} Stall;

static void st_timeout_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Stall* st = data;
    snprintf(st->o.code, sizeof(st->o.code), "%s", code);
    snprintf(st->o.info, sizeof(st->o.info), "%s", futoin_error_info(as));
}

static void st_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_tcp_connect(as, "127.0.0.1", ((Stall*)data)->port);
}

static void st_handshake(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Stall* st = data;
    st->s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    if (st->step == 1) {
        futoin_set_timeout(as, st->timeout_ms);
    }
    futoin_uv_tls_handshake(as, st->s, st->tls, "localhost");
}

static void st_next(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Stall* st = data;
    futoin_set_timeout(as, st->timeout_ms);
    if (st->step == 2) {
        futoin_uv_read_line(as, st->s, 0);
    } else {
        /* Small kernel buffers: most of the data stays queued. */
        int size = 4096;
        uv_send_buffer_size((uv_handle_t*)futoin_uv_stream_handle(st->s), &size);
        futoin_uv_write_static(as, st->s, st->big_data, st->big);
    }
}

static void st_steps(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, st_connect, NULL, data);
    futoin_add(as, st_handshake, NULL, data);
    futoin_add(as, st_next, NULL, data);
}

static void st_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ((Stall*)data)->o.done = 1;
}

static void st_end(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)code;
    ((Stall*)data)->o.done = 1;
}

static void run_stall(Stall* st)
{
    FutoInAsyncSteps* r = uv_new_root();
    futoin_add(r, st_steps, st_timeout_eh, st);
    futoin_add(r, st_done, NULL, st);
    futoin_execute(r, st_end, st);
    assert_true(run_until(&st->o.done, scaled_ms(10000)));
    futoin_asyncsteps_free(r);
}

/* Accepts and says nothing until the test lets it go. */
static void script_silent(Peer* p, int fd)
{
    (void)fd;
    peer_wait_gate(p);
}

static void test_tls_handshake_timeout(void** state)
{
    (void)state;
    Peer peer;
    peer_start(&peer, script_silent, 1);
    Stall st;
    memset(&st, 0, sizeof(st));
    st.tls = client_tls(g_ca);
    st.port = peer.port;
    st.timeout_ms = 100;
    st.step = 1;
    run_stall(&st);
    assert_string_equal(st.o.code, FUTOIN_TIMEOUT);
    char want[64];
    snprintf(want, sizeof(want), "tls_handshake 127.0.0.1:%u", peer.port);
    assert_non_null(strstr(st.o.info, want));
    /* Half a handshake leaves nothing usable: the stream is closed. */
    assert_false(futoin_uv_stream_is_open(st.s));
    futoin_uv_stream_release(st.s);
    futoin_uv_tls_release(st.tls);
    run_for(10);
    peer_join(&peer);
    assert_int_equal(g_misuse, 0);
}

/* A TLS server on a blocking socket: the handshake, then the first half of
 * a record, then nothing until the test lets it go. */
static SSL_CTX* peer_server_ctx(void)
{
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    assert_non_null(ctx);
    if (SSL_CTX_use_certificate_chain_file(ctx, g_srv_crt) != 1
            || SSL_CTX_use_PrivateKey_file(ctx, g_srv_key, SSL_FILETYPE_PEM) != 1) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static void script_half_record(Peer* p, int fd)
{
    SSL_CTX* ctx = peer_server_ctx();
    SSL* ssl = ctx ? SSL_new(ctx) : NULL;
    if (!ssl || !SSL_set_fd(ssl, fd) || SSL_accept(ssl) != 1) {
        p->status = -1;
    } else {
        /* The record goes to memory; half of it to the socket. */
        BIO* mem = BIO_new(BIO_s_mem());
        SSL_set0_wbio(ssl, mem);
        static const char line[] = "a line that never arrives in full\n";
        char* rec = NULL;
        if (SSL_write(ssl, line, (int)sizeof(line) - 1) <= 0) {
            p->status = -2;
        }
        long n = BIO_get_mem_data(mem, &rec);
        if (n < 10 || send(fd, rec, (size_t)n / 2, MSG_NOSIGNAL) != n / 2) {
            p->status = -3;
        }
        peer_wait_gate(p);
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    ERR_clear_error();
}

static void test_tls_stall_mid_record(void** state)
{
    (void)state;
    Peer peer;
    peer_start(&peer, script_half_record, 1);
    Stall st;
    memset(&st, 0, sizeof(st));
    st.tls = client_tls(g_ca);
    st.port = peer.port;
    st.timeout_ms = 150;
    st.step = 2;
    run_stall(&st);
    assert_string_equal(st.o.code, FUTOIN_TIMEOUT);
    char want[64];
    snprintf(want, sizeof(want), "read 127.0.0.1:%u", peer.port);
    assert_non_null(strstr(st.o.info, want));
    /* The read's cancel left the stream as it was: half a record is
     * buffered, nothing decrypted. */
    assert_true(futoin_uv_stream_is_open(st.s));
    assert_int_equal(futoin_uv_stream_buffered(st.s), 0);
    futoin_uv_stream_release(st.s);
    futoin_uv_tls_release(st.tls);
    run_for(10);
    peer_join(&peer);
    assert_int_equal(peer.status, 0);
    assert_int_equal(g_misuse, 0);
}

/* A server of the backend that only handshakes (and then reads nothing
 * for a while: a small receive buffer, no read-ahead). */
typedef struct {
    Side side;
    int read_nothing;
    FutoInUvBudget* budget; /* for the decrypted input, or NULL */
    size_t read_exact;      /* read this many bytes after the handshake */
} Acceptor;

static void acc_handshake(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Acceptor* a = data;
    keep_stream(&a->side, args);
    if (a->read_nothing) {
        futoin_uv_stream_set_read_ahead(a->side.s, 0);
        int size = 4096;
        uv_recv_buffer_size((uv_handle_t*)futoin_uv_stream_handle(a->side.s), &size);
    }
    futoin_uv_stream_set_budget(a->side.s, a->budget);
    futoin_uv_tls_handshake(as, a->side.s, a->side.tls, NULL);
}

static void acc_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Acceptor* a = data;
    a->side.handshaken = 1;
    if (a->read_exact) {
        futoin_uv_read_exact(as, a->side.s, a->read_exact);
    } else if (!a->read_nothing) {
        futoin_uv_read_line(as, a->side.s, 0);
    }
}

static void acc_steps(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, srv_accept, NULL, data);
    futoin_add(as, acc_handshake, NULL, data);
    futoin_add(as, acc_after, NULL, data);
}

static void test_tls_cancel_mid_write(void** state)
{
    (void)state;
    Acceptor acc;
    memset(&acc, 0, sizeof(acc));
    int err = 0;
    acc.side.srv = futoin_uv_server_new(g_uv, "127.0.0.1", 0, 0, &err);
    assert_non_null(acc.side.srv);
    acc.side.tls = server_tls(g_srv_crt, g_srv_key, 0);
    acc.read_nothing = 1;
    FutoInAsyncSteps* rs = uv_new_root();
    futoin_add(rs, acc_steps, eh_side, &acc.side);
    futoin_add(rs, side_done, NULL, &acc.side);
    futoin_execute(rs, side_end, &acc.side);

    Stall st;
    memset(&st, 0, sizeof(st));
    st.tls = client_tls(g_ca);
    st.port = futoin_uv_server_port(acc.side.srv);
    st.timeout_ms = 150;
    st.step = 3;
    st.big = 2u << 20;
    st.big_data = malloc(st.big);
    assert_non_null(st.big_data);
    memset(st.big_data, 'x', st.big);
    run_stall(&st);
    assert_string_equal(st.o.code, FUTOIN_TIMEOUT);
    char want[64];
    snprintf(want, sizeof(want), "write 127.0.0.1:%u", st.port);
    assert_non_null(strstr(st.o.info, want));
    assert_true(acc.side.handshaken);
    assert_int_equal(acc.side.failed, 0);
    /* The records queued before the cancel are libuv's until the close:
     * released with the stream, nothing leaks (ASan, valgrind). */
    futoin_uv_stream_close(st.s);
    futoin_uv_stream_release(st.s);
    futoin_uv_stream_release(acc.side.s);
    run_for(20);
    futoin_asyncsteps_free(rs);
    futoin_uv_server_release(acc.side.srv);
    futoin_uv_tls_release(acc.side.tls);
    futoin_uv_tls_release(st.tls);
    run_for(10);
    free(st.big_data);
    assert_int_equal(g_misuse, 0);
}

/* The input budget counts the decrypted buffer: an exact read larger than
 * the budget fails as on TCP, and the charge goes with the stream. */
static void test_tls_budget(void** state)
{
    (void)state;
    Acceptor acc;
    memset(&acc, 0, sizeof(acc));
    int err = 0;
    acc.side.srv = futoin_uv_server_new(g_uv, "127.0.0.1", 0, 0, &err);
    assert_non_null(acc.side.srv);
    acc.side.tls = server_tls(g_srv_crt, g_srv_key, 0);
    acc.budget = futoin_uv_budget_new(16384);
    assert_non_null(acc.budget);
    acc.read_exact = 200000;
    FutoInAsyncSteps* rs = uv_new_root();
    futoin_add(rs, acc_steps, eh_side, &acc.side);
    futoin_add(rs, side_done, NULL, &acc.side);
    futoin_execute(rs, side_end, &acc.side);

    Stall st;
    memset(&st, 0, sizeof(st));
    st.tls = client_tls(g_ca);
    st.port = futoin_uv_server_port(acc.side.srv);
    st.timeout_ms = 300;
    st.step = 3;
    st.big = 200000;
    st.big_data = malloc(st.big);
    assert_non_null(st.big_data);
    memset(st.big_data, 'b', st.big);
    run_stall(&st);
    assert_true(run_until(&acc.side.done, scaled_ms(10000)));
    assert_true(acc.side.handshaken);
    assert_int_equal(acc.side.failed, 1);
    assert_string_equal(acc.side.code, FUTOIN_COMM_ERROR);
    assert_string_equal(acc.side.info, "ENOBUFS: read: input budget spent");
    assert_true(futoin_uv_budget_used(acc.budget) <= 16384);
    futoin_uv_stream_release(st.s);
    futoin_uv_stream_release(acc.side.s);
    futoin_asyncsteps_free(rs);
    run_for(10);
    assert_int_equal(futoin_uv_budget_used(acc.budget), 0);
    futoin_uv_budget_release(acc.budget);
    futoin_uv_server_release(acc.side.srv);
    futoin_uv_tls_release(acc.side.tls);
    futoin_uv_tls_release(st.tls);
    run_for(10);
    free(st.big_data);
    assert_int_equal(g_misuse, 0);
}

/* ---- renegotiation: a TLS 1.2 client asks, the server refuses ---- */

typedef struct {
    unsigned port;
    pthread_t th;
    int connected;    /* the first handshake succeeded */
    int reneg_result; /* SSL_do_handshake() of the renegotiation */
    char reason[128];
} RenegClient;

static void* reneg_main(void* arg)
{
    RenegClient* rc = arg;
    int fd = client_connect(rc->port);
    struct timeval tv = { 10, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1) {
        rc->connected = 1;
        SSL_renegotiate(ssl);
        rc->reneg_result = SSL_do_handshake(ssl);
        unsigned long e = ERR_get_error();
        snprintf(rc->reason, sizeof(rc->reason), "%s",
                e && ERR_reason_error_string(e) ? ERR_reason_error_string(e) : "");
    }
    ERR_clear_error();
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    return NULL;
}

static void test_tls_renegotiation_refused(void** state)
{
    (void)state;
    Acceptor acc;
    memset(&acc, 0, sizeof(acc));
    int err = 0;
    acc.side.srv = futoin_uv_server_new(g_uv, "127.0.0.1", 0, 0, &err);
    assert_non_null(acc.side.srv);
    acc.side.tls = server_tls(g_srv_crt, g_srv_key, 0);
    FutoInAsyncSteps* rs = uv_new_root();
    futoin_add(rs, acc_steps, eh_side, &acc.side);
    futoin_add(rs, side_done, NULL, &acc.side);
    futoin_execute(rs, side_end, &acc.side);
    RenegClient rc;
    memset(&rc, 0, sizeof(rc));
    rc.port = futoin_uv_server_port(acc.side.srv);
    assert_int_equal(pthread_create(&rc.th, NULL, reneg_main, &rc), 0);
    assert_true(run_until(&acc.side.done, scaled_ms(10000)));
    pthread_join(rc.th, NULL);
    assert_true(rc.connected);
    assert_true(acc.side.handshaken);
    /* The server answered with a no_renegotiation alert, which OpenSSL's
     * client takes as fatal; its handshake_failure alert ends the
     * server's read. */
    assert_true(rc.reneg_result <= 0);
    assert_string_equal(rc.reason, "no renegotiation");
    assert_int_equal(acc.side.failed, 1);
    assert_string_equal(acc.side.code, FUTOIN_COMM_ERROR);
    assert_non_null(strstr(acc.side.info, "EPROTO: read: tls: "));
    assert_int_equal(acc.side.num, UV_EPROTO);
    futoin_asyncsteps_free(rs);
    futoin_uv_stream_release(acc.side.s);
    futoin_uv_server_release(acc.side.srv);
    futoin_uv_tls_release(acc.side.tls);
    run_for(10);
}

/* Plain HTTP sent to a TLS server: the handshake fails with OpenSSL's
 * reason, and the stream is closed (the client sees its end). */
typedef struct {
    unsigned port;
    pthread_t th;
    int got_eof;
} PlainClient;

static void* plain_main(void* arg)
{
    PlainClient* pc = arg;
    int fd = client_connect(pc->port);
    struct timeval tv = { 10, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (send_str(fd, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n") == 0) {
        char buf[256];
        ssize_t n;
        while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
        }
        pc->got_eof = n == 0;
    }
    close(fd);
    return NULL;
}

static void test_tls_plain_text_refused(void** state)
{
    (void)state;
    Acceptor acc;
    memset(&acc, 0, sizeof(acc));
    int err = 0;
    acc.side.srv = futoin_uv_server_new(g_uv, "127.0.0.1", 0, 0, &err);
    assert_non_null(acc.side.srv);
    acc.side.tls = server_tls(g_srv_crt, g_srv_key, 0);
    FutoInAsyncSteps* rs = uv_new_root();
    futoin_add(rs, acc_steps, eh_side, &acc.side);
    futoin_add(rs, side_done, NULL, &acc.side);
    futoin_execute(rs, side_end, &acc.side);
    PlainClient pc;
    memset(&pc, 0, sizeof(pc));
    pc.port = futoin_uv_server_port(acc.side.srv);
    assert_int_equal(pthread_create(&pc.th, NULL, plain_main, &pc), 0);
    assert_true(run_until(&acc.side.done, scaled_ms(10000)));
    run_for(20);
    pthread_join(pc.th, NULL);
    assert_false(acc.side.handshaken);
    assert_int_equal(acc.side.failed, 1);
    assert_string_equal(acc.side.code, FUTOIN_COMM_ERROR);
    assert_int_equal(acc.side.num, UV_EPROTO);
    assert_non_null(strstr(acc.side.info, "EPROTO: tls_handshake 127.0.0.1:"));
    /* OpenSSL recognizes an HTTP request where a ClientHello belongs. */
    assert_non_null(strstr(acc.side.info, ": http request"));
    assert_true(pc.got_eof);
    assert_false(futoin_uv_stream_is_open(acc.side.s));
    futoin_asyncsteps_free(rs);
    futoin_uv_stream_release(acc.side.s);
    futoin_uv_server_release(acc.side.srv);
    futoin_uv_tls_release(acc.side.tls);
    run_for(10);
}

/* ---- misuse and configuration errors ---- */

static void mis_handshake(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_tls_handshake(as, NULL, (FutoInUvTls*)data, "localhost");
}

static void test_tls_config_errors(void** state)
{
    (void)state;
    int err = 0;
    assert_int_equal(futoin_uv_tls_available(), 1);
    assert_null(futoin_uv_tls_new(0x100, &err));
    assert_int_equal(err, UV_EINVAL);
    assert_null(futoin_uv_tls_new(FUTOIN_UV_TLS_CLIENT_CERT, &err));
    assert_int_equal(err, UV_EINVAL);
    FutoInUvTls* t = futoin_uv_tls_new(0, &err);
    assert_non_null(t);
    assert_non_null(futoin_uv_tls_ssl_ctx(t));
    char missing[160];
    snprintf(missing, sizeof(missing), "%s/missing.pem", g_dir);
    assert_int_equal(futoin_uv_tls_set_ca(t, missing), UV_EPROTO);
    assert_non_null(strstr(futoin_uv_tls_last_error(t), "set_ca "));
    /* A key that does not belong to the certificate. */
    assert_int_equal(futoin_uv_tls_set_cert(t, g_srv_crt, g_cli_key), UV_EPROTO);
    assert_non_null(strstr(futoin_uv_tls_last_error(t), "set_cert "));
    assert_int_equal(futoin_uv_tls_set_ca(NULL, g_ca), UV_EINVAL);
    assert_int_equal(futoin_uv_tls_set_cert(t, NULL, g_cli_key), UV_EINVAL);

    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, mis_handshake, NULL, t);
    Outcome o;
    run_root(root, &o, 2000);
    assert_string_equal(o.code, FUTOIN_INTERNAL_ERROR);
    assert_string_equal(o.info, "EINVAL: futoin_uv_tls_handshake: s is NULL");
    futoin_asyncsteps_free(root);
    futoin_uv_tls_release(t);
    assert_int_equal(futoin_uv_stream_is_tls(NULL), 0);
    assert_null(futoin_uv_stream_ssl(NULL));
}

/* A server configuration without a certificate is refused by the step. */
static void test_tls_server_without_cert(void** state)
{
    (void)state;
    int err = 0;
    FutoInUvTls* bare = futoin_uv_tls_new(FUTOIN_UV_TLS_SERVER, &err);
    assert_non_null(bare);
    Side srv;
    Side cli;
    run_pair(&srv, &cli, bare, client_tls(g_ca), "localhost");
    assert_int_equal(srv.failed, 1);
    assert_string_equal(srv.code, FUTOIN_INTERNAL_ERROR);
    assert_string_equal(srv.info,
            "EINVAL: futoin_uv_tls_handshake: server configuration without a certificate");
    /* The client sees the connection go. */
    assert_int_equal(cli.failed, 1);
    assert_string_equal(cli.code, FUTOIN_COMM_ERROR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UV_STRICT_TEST(test_tls_echo_and_close_notify),
        UV_STRICT_TEST(test_tls_ip_host),
        UV_STRICT_TEST(test_tls_unknown_ca),
        UV_STRICT_TEST(test_tls_wrong_host),
        UV_STRICT_TEST(test_tls_over_socketpair),
        UV_STRICT_TEST(test_tls_client_cert),
        UV_STRICT_TEST(test_tls_handshake_timeout),
        UV_STRICT_TEST(test_tls_stall_mid_record),
        UV_STRICT_TEST(test_tls_cancel_mid_write),
        UV_STRICT_TEST(test_tls_budget),
        UV_STRICT_TEST(test_tls_renegotiation_refused),
        UV_STRICT_TEST(test_tls_plain_text_refused),
        UV_STRICT_TEST(test_tls_config_errors),
        UV_STRICT_TEST(test_tls_server_without_cert),
    };
    return cmocka_run_group_tests(tests, make_certs, remove_certs);
}
