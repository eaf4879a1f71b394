/* SPDX-License-Identifier: MIT */
/*
 * File handles and filesystem steps on uv_fs_* (libuv's thread pool):
 * open, pread, pwrite, fsync, fstat, close on a FutoInUvFile; stat,
 * rename, unlink, mkdir, rmdir, readdir on paths.
 *
 * Each step owns one FsOp with its uv_fs_t. A request cannot be stopped
 * once a pool thread runs it, so a cancelled step detaches (op->as = NULL;
 * uv_cancel() withdraws a request that is still queued) and the request's
 * callback only releases what the op holds: an open that completes for a
 * step that is gone closes the new descriptor, every buffer is freed, the
 * file's reference is dropped. The step hears nothing more.
 *
 * A file's descriptor is closed only when no request that uses it is in
 * the pool (inflight == 0): a close step that finds one there waits for it,
 * so that a detached pread never reads a descriptor number reused by
 * another open. Like futoin_uv_file_read(), files are opened with
 * O_NONBLOCK and only regular files are kept open: no request may block a
 * pool thread for long.
 */
#include "uv_impl.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_CHUNK 65536u

struct FutoInUvFile {
    FutoInUv* uv;
    uv_file fd; /* -1 once a close step took it */
    uint32_t refs;
    uint32_t inflight;     /* requests in the pool that use fd */
    int64_t pos;           /* the position of sequential reads and writes */
    struct FsOp* close_op; /* a close step waiting for inflight to drop */
    char path[];
};

enum {
    K_OPEN = 1,
    K_PREAD,
    K_PWRITE,
    K_FSYNC,
    K_FSTAT,
    K_CLOSE,
    K_STAT,
    K_RENAME,
    K_UNLINK,
    K_MKDIR,
    K_RMDIR,
    K_READDIR
};

typedef struct FsOp {
    uv_fs_t req;
    uv_loop_t* loop;
    FutoInAsyncSteps* as; /* NULL once the step is gone */
    FutoInUvFile* f;      /* a reference for file steps, else NULL */
    FutoInUvFile* newf;   /* open: the handle, made before the open */
    int kind;
    int counted; /* counted in f->inflight */
    int opening; /* open: the fstat after open() */
    uv_file fd;  /* open: a descriptor not yet handed over; close: the one */
    int flags;
    int mode;
    int64_t off; /* -1: sequential */
    char* buf;
    size_t len;
    size_t done;
    const char* path2; /* rename: the target, in path[] */
    char path[];
} FsOp;

/* Parameters, in the adding step's memory: the reference to the file and
 * the copy of the data are the op's once the step starts. */
typedef struct {
    FutoInUvFile* f;
    int kind;
    int flags;
    int mode;
    int oom;
    int64_t off;
    size_t len;
    char* data;
    size_t path2_at; /* rename: offset of the target in path[] */
    size_t plen;     /* bytes of path[], NULs included */
    char path[];
} FsParams;

static const char* const NAMES[] = { "", "open", "pread", "pwrite", "fsync", "fstat", "close",
    "stat", "rename", "unlink", "mkdir", "rmdir", "readdir" };
static const char* const WAITS[] = { "", "file_open", "file_pread", "file_pwrite", "file_fsync",
    "file_fstat", "file_close", "stat", "rename", "unlink", "mkdir", "rmdir", "readdir" };
/* The error_info of a step that cannot start for want of memory, as
 * futoin/uv.h documents it (literals: a failing step keeps the pointer). */
static const char* const NOMEM[] = { "", "open: out of memory", "pread: out of memory",
    "pwrite: out of memory", "fsync: out of memory", "fstat: out of memory", "close: out of memory",
    "stat: out of memory", "rename: out of memory", "unlink: out of memory", "mkdir: out of memory",
    "rmdir: out of memory", "readdir: out of memory" };

/* ---- the handle ---- */

static void on_release_closed(uv_fs_t* req)
{
    uv_fs_req_cleanup(req);
    free(req);
}

static void close_fd_detached(uv_loop_t* loop, uv_file fd)
{
    uv_fs_t* req = malloc(sizeof(*req));
    if (req && uv_fs_close(loop, req, fd, on_release_closed) == 0) {
        return;
    }
    free(req);
    /* Out of memory: close it here (a regular file's close is short). */
    uv_fs_t sync;
    uv_fs_close(loop, &sync, fd, NULL);
    uv_fs_req_cleanup(&sync);
}

FutoInUvFile* futoin_uv_file_ref(FutoInUvFile* f)
{
    if (f) {
        ++f->refs;
    }
    return f;
}

void futoin_uv_file_release(FutoInUvFile* f)
{
    if (!f || --f->refs > 0) {
        return;
    }
    /* Requests and a waiting close hold references: none is left. */
    if (f->fd >= 0) {
        close_fd_detached(futoin_uv_uv_loop(f->uv), f->fd);
    }
    free(f);
}

const char* futoin_uv_file_path(const FutoInUvFile* f)
{
    return f ? f->path : NULL;
}

int futoin_uv_file_is_open(const FutoInUvFile* f)
{
    return f && f->fd >= 0;
}

static void file_value_cleanup(FutoInBinaryValue* v)
{
    futoin_uv_file_release(v->custom_data);
}

const FutoInType futoin_uv_file_type = { FTN_TYPE_CUSTOM_OBJECT, file_value_cleanup };

FutoInUvFile* futoin_uv_arg_file(const FutoInArgs* args, int i)
{
    if (!args || i < 0 || i > 3 || args->args[i].type != &futoin_uv_file_type) {
        return NULL;
    }
    return args->args[i].custom_data;
}

/* ---- ops ---- */

static void issue(FsOp* op);

static void op_free(FsOp* op)
{
    FutoInUvFile* f = op->f;
    free(op->buf);
    free(op->newf);
    free(op);
    if (!f) {
        return;
    }
    futoin_uv_file_release(f);
}

static void on_op_closed(uv_fs_t* req)
{
    uv_fs_req_cleanup(req);
    op_free(req->data);
}

/* The op is over: closes a descriptor it still holds, counts the request
 * out of its file (starting a close that waited for it), frees it. */
static void op_end(FsOp* op)
{
    FutoInUvFile* f = op->f;
    if (op->counted && f) { /* counted: only an op with a file */
        op->counted = 0;
        if (--f->inflight == 0 && f->close_op) {
            FsOp* c = f->close_op;
            f->close_op = NULL;
            issue(c);
        }
    }
    if (op->fd >= 0 && op->kind == K_OPEN) {
        uv_file fd = op->fd;
        op->fd = -1;
        op->req.data = op;
        if (uv_fs_close(op->loop, &op->req, fd, on_op_closed) == 0) {
            return;
        }
    }
    op_free(op);
}

static void op_fail(FsOp* op, const char* code, int err, const char* why)
{
    if (op->as) {
        const char* what = NAMES[op->kind];
        if (why) {
            futoin__uv_failf_owned(op->as, op, code, err, "%s %s: %s", what, op->path, why);
        } else {
            futoin__uv_failf_owned(op->as, op, code, err, "%s %s", what, op->path);
        }
        op->as = NULL;
    }
    op_end(op);
}

static void op_succeed(FsOp* op, FutoInArgs* args)
{
    if (op->as) {
        futoin_owned_success(op->as, op, args);
        op->as = NULL;
    }
    op_end(op);
}

static void stat_args(FutoInArgs* args, const uv_stat_t* st)
{
    memset(args, 0, sizeof(*args));
    args->arg0 = futoin_val_u64(st->st_size);
    args->arg1 = futoin_val_u32((uint32_t)st->st_mode);
    args->arg2 = futoin_val_i64(st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000);
}

static void on_done(uv_fs_t* req)
{
    FsOp* op = req->data;
    ssize_t r = req->result;
    FutoInArgs args;
    memset(&args, 0, sizeof(args));
    if (r >= 0 && (op->kind == K_FSTAT || op->kind == K_STAT || op->opening)) {
        stat_args(&args, &req->statbuf);
    }
    if (op->kind != K_READDIR) {
        uv_fs_req_cleanup(req);
    }
    if (op->kind == K_CLOSE) {
        op->fd = -1;
    }
    if (!op->as) {
        if (op->kind == K_READDIR) {
            uv_fs_req_cleanup(req);
        }
        if (op->kind == K_OPEN && !op->opening && r >= 0) {
            op->fd = (uv_file)r;
        }
        op_end(op);
        return;
    }
    if (r < 0) {
        if (op->kind == K_READDIR) {
            uv_fs_req_cleanup(req);
        }
        const char* why = NULL;
        if (r == UV_EAGAIN && (op->kind == K_PREAD || op->kind == K_PWRITE)) {
            why = "would block";
        } else if (r == UV_ENXIO && op->kind == K_OPEN) {
            why = "not a regular file (socket or device)";
        } else if (r == UV_EISDIR && op->kind == K_OPEN) {
            why = "is a directory";
        } else if (r == UV_EBADF && op->kind != K_CLOSE && op->f) {
            why = "file is closed";
        }
        op_fail(op, FUTOIN_COMM_ERROR, (int)r, why);
        return;
    }
    switch (op->kind) {
    case K_OPEN:
        if (!op->opening) {
            op->fd = (uv_file)r;
            op->opening = 1;
            op->req.data = op;
            int err = uv_fs_fstat(op->loop, &op->req, op->fd, on_done);
            if (err) {
                op_fail(op, FUTOIN_COMM_ERROR, err, NULL);
            }
            return;
        }
        {
            uint32_t mode = args.arg1.u32;
            if ((mode & S_IFMT) != S_IFREG) {
                int dir = (mode & S_IFMT) == S_IFDIR;
                op_fail(op, FUTOIN_COMM_ERROR, dir ? UV_EISDIR : UV_EFTYPE,
                        dir ? "is a directory" : "not a regular file");
                return;
            }
            FutoInUvFile* f = op->newf;
            op->newf = NULL;
            f->fd = op->fd;
            op->fd = -1;
            memset(&args, 0, sizeof(args));
            args.arg0 = futoin_val_custom(&futoin_uv_file_type, f);
        }
        break;
    case K_PREAD:
        if (op->off < 0) {
            op->f->pos += r;
        }
        op->buf[r] = '\0';
        args.arg0 = futoin__uv_bytes_adopt(op->buf, (size_t)r, 0);
        op->buf = NULL;
        break;
    case K_PWRITE:
        op->done += (size_t)r;
        if (op->done < op->len && r > 0) {
            issue(op);
            return;
        }
        if (op->off < 0) {
            op->f->pos += (int64_t)op->done;
        }
        args.arg0 = futoin_val_u64(op->done);
        break;
    case K_READDIR: {
        uv_dirent_t ent;
        size_t total = 0;
        uint32_t count = 0;
        /* libuv hands the entries out once: copy each as it comes. */
        size_t cap = 256;
        char* names = malloc(cap);
        while (names && uv_fs_scandir_next(req, &ent) != UV_EOF) {
            size_t n = strlen(ent.name) + 1;
            if (total + n + 1 > cap) {
                size_t ncap = cap;
                while (total + n + 1 > ncap) {
                    ncap *= 2;
                }
                char* nn = realloc(names, ncap);
                if (!nn) {
                    free(names);
                    names = NULL;
                    break;
                }
                names = nn;
                cap = ncap;
            }
            memcpy(names + total, ent.name, n);
            total += n;
            ++count;
        }
        uv_fs_req_cleanup(req);
        if (!names) {
            /* "ENOMEM: readdir PATH: out of memory" (the ENOMEM form adds
             * the words itself). */
            op_fail(op, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, NULL);
            return;
        }
        names[total] = '\0';
        args.arg0 = futoin__uv_bytes_adopt(names, total, 0);
        args.arg1 = futoin_val_u32(count);
        break;
    }
    default:
        break;
    }
    op_succeed(op, &args);
}

/* Starts op's request; a refusal fails the op (the step is waiting). */
static void issue(FsOp* op)
{
    int err = 0;
    uv_fs_t* req = &op->req;
    req->data = op;
    uv_buf_t buf;
    switch (op->kind) {
    case K_OPEN:
        err = uv_fs_open(op->loop, req, op->path, op->flags, op->mode, on_done);
        break;
    case K_PREAD:
        buf = uv_buf_init(op->buf, (unsigned)op->len);
        err = uv_fs_read(op->loop, req, op->f->fd, &buf, 1, op->off < 0 ? op->f->pos : op->off,
                on_done);
        break;
    case K_PWRITE: {
        size_t rest = op->len - op->done;
        int64_t at = (op->off < 0 ? op->f->pos : op->off) + (int64_t)op->done;
        buf = uv_buf_init(op->buf + op->done, (unsigned)rest);
        err = uv_fs_write(op->loop, req, op->f->fd, &buf, 1, at, on_done);
        break;
    }
    case K_FSYNC:
        err = uv_fs_fsync(op->loop, req, op->f->fd, on_done);
        break;
    case K_FSTAT:
        err = uv_fs_fstat(op->loop, req, op->f->fd, on_done);
        break;
    case K_CLOSE:
        err = uv_fs_close(op->loop, req, op->fd, on_done);
        break;
    case K_STAT:
        err = uv_fs_stat(op->loop, req, op->path, on_done);
        break;
    case K_RENAME:
        err = uv_fs_rename(op->loop, req, op->path, op->path2, on_done);
        break;
    case K_UNLINK:
        err = uv_fs_unlink(op->loop, req, op->path, on_done);
        break;
    case K_MKDIR:
        err = uv_fs_mkdir(op->loop, req, op->path, op->mode, on_done);
        break;
    case K_RMDIR:
        err = uv_fs_rmdir(op->loop, req, op->path, on_done);
        break;
    default:
        err = uv_fs_scandir(op->loop, req, op->path, 0, on_done);
        break;
    }
    if (err) {
        op_fail(op, FUTOIN_COMM_ERROR, err, NULL);
    }
}

static void op_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    FsOp* op = data;
    op->as = NULL;
    /* A close is never withdrawn (its descriptor would stay open), nor
     * one that waits for the pool to finish with its file (not queued). */
    if (op->kind != K_CLOSE) {
        uv_cancel((uv_req_t*)&op->req);
    }
}

static void fs_params_free(void* data)
{
    FsParams* p = data;
    free(p->data);
    futoin_uv_file_release(p->f);
}

static void fs_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FsParams* p = data;
    const char* what = NAMES[p->kind];
    if (p->oom) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, NOMEM[p->kind]);
        return;
    }
    FutoInUv* uv = futoin__uv_require(as, what);
    if (!uv) {
        return;
    }
    const char* path = p->f ? p->f->path : p->path;
    if (p->f && p->f->fd < 0) {
        futoin__uv_failf(as, FUTOIN_COMM_ERROR, UV_EBADF, "%s %s: file is closed", what, path);
        return;
    }
    size_t plen = p->f ? strlen(path) + 1 : p->plen;
    FsOp* op = calloc(1, sizeof(*op) + plen);
    if (!op) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, NOMEM[p->kind]);
        return;
    }
    memcpy(op->path, path, plen);
    op->loop = uv->uv;
    op->kind = p->kind;
    op->fd = -1;
    op->flags = p->flags;
    op->mode = p->mode;
    op->off = p->off;
    op->len = p->len;
    if (p->kind == K_RENAME) {
        op->path2 = op->path + p->path2_at;
    }
    if (p->kind == K_OPEN) {
        op->newf = calloc(1, sizeof(FutoInUvFile) + plen);
        if (!op->newf) {
            op_free(op);
            futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, NOMEM[p->kind]);
            return;
        }
        op->newf->uv = uv;
        op->newf->refs = 1;
        op->newf->fd = -1;
        memcpy(op->newf->path, path, plen);
    } else if (p->kind == K_PREAD) {
        op->buf = malloc(p->len + 1);
        if (!op->buf) {
            op_free(op);
            futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, NOMEM[p->kind]);
            return;
        }
    } else if (p->kind == K_PWRITE) {
        op->buf = p->data;
        p->data = NULL;
    }
    op->as = as;
    futoin_wait_owned(as, op_cancel, op);
    futoin__uv_wait_info(as, WAITS[p->kind], path);
    if (p->f) {
        op->f = futoin_uv_file_ref(p->f);
        if (p->kind == K_CLOSE) {
            op->fd = p->f->fd;
            p->f->fd = -1;
            if (p->f->inflight) {
                p->f->close_op = op;
                return;
            }
        } else {
            op->counted = 1;
            ++p->f->inflight;
        }
    }
    issue(op);
}

static FsParams* add_params(FutoInAsyncSteps* as, int kind, FutoInUvFile* f, const char* path,
        const char* path2)
{
    size_t l1 = path ? strlen(path) + 1 : 0;
    size_t l2 = path2 ? strlen(path2) + 1 : 0;
    FsParams* p = futoin__uv_add_step(as, fs_start, sizeof(FsParams) + l1 + l2, fs_params_free,
            NOMEM[kind]);
    if (!p) {
        return NULL;
    }
    p->kind = kind;
    p->f = futoin_uv_file_ref(f);
    p->plen = l1 + l2;
    if (l1) {
        memcpy(p->path, path, l1);
    }
    if (l2) {
        p->path2_at = l1;
        memcpy(p->path + l1, path2, l2);
    }
    return p;
}

static int path_ok(FutoInAsyncSteps* as, const char* fn, const char* name, const char* path)
{
    if (path) {
        return 1;
    }
    futoin__uv_add_failf(as, "EINVAL: %s: %s is NULL", fn, name);
    return 0;
}

static int file_ok(FutoInAsyncSteps* as, const char* fn, const FutoInUvFile* f)
{
    if (f) {
        return 1;
    }
    futoin__uv_add_failf(as, "EINVAL: %s: f is NULL", fn);
    return 0;
}

void futoin_uv_file_open(FutoInAsyncSteps* as, const char* path, int flags, int mode)
{
    if (!path_ok(as, "futoin_uv_file_open", "path", path)) {
        return;
    }
    if (mode < 0 || mode > 07777) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_file_open: mode %d out of range (0..07777)",
                mode);
        return;
    }
    FsParams* p = add_params(as, K_OPEN, NULL, path, NULL);
    if (p) {
        /* See the top of the file and futoin_uv_file_read(). */
        p->flags = flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
        p->mode = mode;
    }
}

void futoin_uv_file_pread(FutoInAsyncSteps* as, FutoInUvFile* f, int64_t offset, size_t max)
{
    if (!file_ok(as, "futoin_uv_file_pread", f)) {
        return;
    }
    if (offset < -1) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_file_pread: offset %lld out of range",
                (long long)offset);
        return;
    }
    if (max >= FUTOIN_UV_MAX_IO_LEN) {
        futoin__uv_add_failf(as,
                "EINVAL: futoin_uv_file_pread: max %zu out of range (0..UINT32_MAX - 1)", max);
        return;
    }
    FsParams* p = add_params(as, K_PREAD, f, NULL, NULL);
    if (p) {
        p->off = offset;
        p->len = max ? max : DEFAULT_CHUNK;
    }
}

void futoin_uv_file_pwrite(FutoInAsyncSteps* as, FutoInUvFile* f, int64_t offset, const void* data,
        size_t len)
{
    if (!file_ok(as, "futoin_uv_file_pwrite", f)) {
        return;
    }
    if (offset < -1) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_file_pwrite: offset %lld out of range",
                (long long)offset);
        return;
    }
    if (!data && len) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_file_pwrite: NULL data with len %zu", len);
        return;
    }
    if (len >= FUTOIN_UV_MAX_IO_LEN) {
        futoin__uv_add_failf(as,
                "EINVAL: futoin_uv_file_pwrite: len %zu out of range (0..UINT32_MAX - 1)", len);
        return;
    }
    FsParams* p = add_params(as, K_PWRITE, f, NULL, NULL);
    if (!p) {
        return;
    }
    p->off = offset;
    p->len = len;
    p->data = malloc(len ? len : 1);
    if (!p->data) {
        p->oom = 1;
        return;
    }
    if (len) {
        memcpy(p->data, data, len);
    }
}

void futoin_uv_file_fsync(FutoInAsyncSteps* as, FutoInUvFile* f)
{
    if (file_ok(as, "futoin_uv_file_fsync", f)) {
        add_params(as, K_FSYNC, f, NULL, NULL);
    }
}

void futoin_uv_file_fstat(FutoInAsyncSteps* as, FutoInUvFile* f)
{
    if (file_ok(as, "futoin_uv_file_fstat", f)) {
        add_params(as, K_FSTAT, f, NULL, NULL);
    }
}

void futoin_uv_file_close(FutoInAsyncSteps* as, FutoInUvFile* f)
{
    if (file_ok(as, "futoin_uv_file_close", f)) {
        add_params(as, K_CLOSE, f, NULL, NULL);
    }
}

void futoin_uv_stat(FutoInAsyncSteps* as, const char* path)
{
    if (path_ok(as, "futoin_uv_stat", "path", path)) {
        add_params(as, K_STAT, NULL, path, NULL);
    }
}

void futoin_uv_rename(FutoInAsyncSteps* as, const char* from, const char* to)
{
    if (path_ok(as, "futoin_uv_rename", "from", from)
            && path_ok(as, "futoin_uv_rename", "to", to)) {
        add_params(as, K_RENAME, NULL, from, to);
    }
}

void futoin_uv_unlink(FutoInAsyncSteps* as, const char* path)
{
    if (path_ok(as, "futoin_uv_unlink", "path", path)) {
        add_params(as, K_UNLINK, NULL, path, NULL);
    }
}

void futoin_uv_mkdir(FutoInAsyncSteps* as, const char* path, int mode)
{
    if (!path_ok(as, "futoin_uv_mkdir", "path", path)) {
        return;
    }
    if (mode < 0 || mode > 07777) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_mkdir: mode %d out of range (0..07777)", mode);
        return;
    }
    FsParams* p = add_params(as, K_MKDIR, NULL, path, NULL);
    if (p) {
        p->mode = mode;
    }
}

void futoin_uv_rmdir(FutoInAsyncSteps* as, const char* path)
{
    if (path_ok(as, "futoin_uv_rmdir", "path", path)) {
        add_params(as, K_RMDIR, NULL, path, NULL);
    }
}

void futoin_uv_readdir(FutoInAsyncSteps* as, const char* path)
{
    if (path_ok(as, "futoin_uv_readdir", "path", path)) {
        add_params(as, K_READDIR, NULL, path, NULL);
    }
}
