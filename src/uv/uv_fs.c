/* SPDX-License-Identifier: MIT */
/*
 * Whole-file read and write steps on uv_fs_* (libuv's thread pool).
 *
 * Each step is a chain open → fstat → read/write… → close on one uv_fs_t.
 * Filesystem requests cannot be stopped once a pool thread runs them, so a
 * cancelled step detaches (op->as = NULL; uv_cancel() withdraws the request
 * if it is still queued) and the chain winds down on its own: an open file
 * is still closed, then the memory is freed. The step hears nothing.
 *
 * Detaching only helps if no request can block for long: a blocked one
 * holds one of libuv's few pool threads and keeps uv_run() alive, whatever
 * the step did. So files are opened with O_NONBLOCK (a FIFO's open() would
 * wait for its other end), and only regular files are read or written:
 * FIFOs, sockets, devices and directories are refused after fstat(). The
 * descriptor stays non-blocking: a pseudo-file that poses as a regular one
 * but would block (some of /proc or tracefs) fails with EAGAIN instead of
 * holding a thread.
 */
#include "uv_impl.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_FILE (64u << 20)
#define READ_CHUNK 65536u
/* The largest max_bytes: a result value's length is 32 bits, and the
 * buffer (max + 1 bytes, plus the NUL) must be countable in a size_t. */
#define MAX_FILE_LIMIT                                                                             \
    ((uint64_t)SIZE_MAX - 2u < UINT32_MAX - 1u ? (uint64_t)SIZE_MAX - 2u : UINT32_MAX - 1u)

typedef struct {
    uv_fs_t req;
    uv_loop_t* loop;
    FutoInAsyncSteps* as; /* NULL once cancelled */
    uv_file fd;           /* -1 when not open */
    int writing;
    int err;              /* first libuv error, 0 if none */
    const char* err_what; /* the operation that failed */
    const char* err_why;  /* appended to error_info when not NULL */
    char* data;
    size_t len;  /* read: bytes read; write: bytes to write */
    size_t cap;  /* read: buffer size (data has cap + 1 bytes) */
    size_t max;  /* read: limit */
    size_t done; /* write: bytes written */
    char path[];
} FileOp;

static void deliver(FileOp* op)
{
    FutoInAsyncSteps* as = op->as;
    if (!as) {
        free(op->data);
        free(op);
        return;
    }
    /* Owned by op: only this operation ends the step's wait. */
    if (op->err) {
        if (op->err_why) {
            futoin__uv_failf_owned(as, op, FUTOIN_COMM_ERROR, op->err, "%s %s: %s", op->err_what,
                    op->path, op->err_why);
        } else {
            futoin__uv_failf_owned(as, op, FUTOIN_COMM_ERROR, op->err, "%s %s", op->err_what,
                    op->path);
        }
        free(op->data);
        free(op);
        return;
    }
    FutoInArgs args;
    memset(&args, 0, sizeof(args));
    if (op->writing) {
        args.arg0 = futoin_val_u64(op->done);
        free(op->data);
    } else {
        op->data[op->len] = '\0';
        args.arg0 = futoin__uv_bytes_adopt(op->data, op->len, 0);
    }
    futoin_owned_success(as, op, &args);
    free(op);
}

static void on_closed(uv_fs_t* req)
{
    FileOp* op = req->data;
    if (req->result < 0 && !op->err) {
        op->err = (int)req->result;
        op->err_what = "close";
    }
    uv_fs_req_cleanup(req);
    op->fd = -1;
    deliver(op);
}

/* Ends the chain: closes the file if it is open, then delivers. */
static void finish(FileOp* op)
{
    if (op->fd >= 0) {
        op->req.data = op;
        if (uv_fs_close(op->loop, &op->req, op->fd, on_closed) == 0) {
            return;
        }
        op->fd = -1;
    }
    deliver(op);
}

static void fail_why(FileOp* op, int err, const char* what, const char* why)
{
    if (!op->err) {
        op->err = err;
        op->err_what = what;
        op->err_why = why;
    }
    finish(op);
}

static void fail(FileOp* op, int err, const char* what)
{
    fail_why(op, err, what, NULL);
}

static const char* step_name(const FileOp* op)
{
    return op->writing ? "write" : "read";
}

/* What is wrong with a file of this mode, or NULL for a regular file. */
static const char* not_regular(uint64_t mode, int* err)
{
    *err = UV_EFTYPE;
    switch (mode & S_IFMT) {
    case S_IFREG:
        return NULL;
    case S_IFDIR:
        *err = UV_EISDIR;
        return "is a directory";
    case S_IFIFO:
        return "not a regular file (FIFO)";
    case S_IFSOCK:
        return "not a regular file (socket)";
    case S_IFCHR:
        return "not a regular file (character device)";
    case S_IFBLK:
        return "not a regular file (block device)";
    default:
        return "not a regular file";
    }
}

static void write_more(FileOp* op);

/* ---- read ---- */

static void on_read(uv_fs_t* req);

static void read_more(FileOp* op)
{
    if (op->len == op->cap) {
        if (op->cap >= op->max + 1) {
            fail(op, UV_EFBIG, "read");
            return;
        }
        /* Doubles up to max + 1 (no overflow: max <= MAX_FILE_LIMIT). */
        size_t cap = op->cap > (op->max + 1) / 2 ? op->max + 1 : op->cap * 2;
        char* nd = realloc(op->data, cap + 1);
        if (!nd) {
            fail(op, UV_ENOMEM, "read");
            return;
        }
        op->data = nd;
        op->cap = cap;
    }
    size_t room = op->cap - op->len;
    uv_buf_t buf = uv_buf_init(op->data + op->len,
            (unsigned)(room > UINT32_MAX ? UINT32_MAX : room));
    op->req.data = op;
    int err = uv_fs_read(op->loop, &op->req, op->fd, &buf, 1, -1, on_read);
    if (err) {
        fail(op, err, "read");
    }
}

static void on_read(uv_fs_t* req)
{
    FileOp* op = req->data;
    ssize_t n = req->result;
    uv_fs_req_cleanup(req);
    /* NOLINTNEXTLINE(bugprone-branch-clone): the step gone, or end of file: two cases */
    if (!op->as) {
        finish(op);
    } else if (n == UV_EAGAIN) {
        fail_why(op, (int)n, "read", "would block");
    } else if (n < 0) {
        fail(op, (int)n, "read");
    } else if (n == 0) {
        finish(op);
    } else {
        op->len += (size_t)n;
        if (op->len > op->max) {
            fail(op, UV_EFBIG, "read");
        } else {
            read_more(op);
        }
    }
}

static void on_stat(uv_fs_t* req)
{
    FileOp* op = req->data;
    ssize_t r = req->result;
    uint64_t size = req->statbuf.st_size;
    uint64_t mode = req->statbuf.st_mode;
    uv_fs_req_cleanup(req);
    if (!op->as) {
        finish(op);
        return;
    }
    if (r < 0) {
        fail(op, (int)r, "fstat");
        return;
    }
    int err;
    const char* why = not_regular(mode, &err);
    if (why) {
        fail_why(op, err, step_name(op), why);
        return;
    }
    if (op->writing) {
        write_more(op);
        return;
    }
    if (size > op->max) {
        fail(op, UV_EFBIG, "read");
        return;
    }
    /* One byte more than the size, so that reaching EOF needs no regrowth;
     * files that report size 0 (procfs) grow from READ_CHUNK. */
    op->cap = size ? (size_t)size + 1 : READ_CHUNK;
    if (op->cap > op->max + 1) {
        op->cap = op->max + 1;
    }
    op->data = malloc(op->cap + 1);
    if (!op->data) {
        fail(op, UV_ENOMEM, "read");
        return;
    }
    read_more(op);
}

/* ---- write ---- */

static void on_write(uv_fs_t* req);

static void write_more(FileOp* op)
{
    if (op->done == op->len) {
        finish(op);
        return;
    }
    size_t rest = op->len - op->done;
    uv_buf_t buf = uv_buf_init(op->data + op->done,
            (unsigned)(rest > UINT32_MAX ? UINT32_MAX : rest));
    op->req.data = op;
    int err = uv_fs_write(op->loop, &op->req, op->fd, &buf, 1, -1, on_write);
    if (err) {
        fail(op, err, "write");
    }
}

static void on_write(uv_fs_t* req)
{
    FileOp* op = req->data;
    ssize_t n = req->result;
    uv_fs_req_cleanup(req);
    if (!op->as) {
        finish(op);
    } else if (n == UV_EAGAIN) {
        fail_why(op, (int)n, "write", "would block");
    } else if (n < 0) {
        fail(op, (int)n, "write");
    } else {
        op->done += (size_t)n;
        write_more(op);
    }
}

/* ---- open ---- */

static void on_open(uv_fs_t* req)
{
    FileOp* op = req->data;
    ssize_t r = req->result;
    uv_fs_req_cleanup(req);
    if (r >= 0) {
        op->fd = (uv_file)r;
    }
    if (!op->as) {
        finish(op);
    } else if (r == UV_ENXIO) {
        /* O_NONBLOCK's answer for a FIFO without a reader (writing), and
         * open()'s for a socket or a device without a driver. */
        fail_why(op, (int)r, step_name(op),
                op->writing ? "not a regular file (FIFO without a reader, socket or device)"
                            : "not a regular file (socket or device)");
    } else if (r == UV_EISDIR) {
        fail_why(op, (int)r, step_name(op), "is a directory");
    } else if (r < 0) {
        fail(op, (int)r, "open");
    } else {
        op->req.data = op;
        int err = uv_fs_fstat(op->loop, &op->req, op->fd, on_stat);
        if (err) {
            fail(op, err, "fstat");
        }
    }
}

static void file_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    FileOp* op = data;
    op->as = NULL;
    uv_cancel((uv_req_t*)&op->req);
}

/* Parameters: the data to write is malloc()ed and handed over to the
 * operation when the step starts (FileOp outlives a cancelled step). */
typedef struct {
    char* data;
    size_t len;
    size_t max;
    int writing;
    int append;
    int oom; /* the copy of the data could not be made */
    char path[];
} FileParams;

static void file_params_free(void* p)
{
    free(((FileParams*)p)->data);
}

static void file_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FileParams* p = data;
    if (p->oom) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "file write: out of memory");
        return;
    }
    FutoInUv* uv = futoin__uv_require(as, p->writing ? "file write" : "file read");
    if (!uv) {
        return;
    }
    size_t plen = strlen(p->path);
    FileOp* op = calloc(1, sizeof(*op) + plen + 1);
    if (!op) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "file: out of memory");
        return;
    }
    memcpy(op->path, p->path, plen + 1);
    op->loop = uv->uv;
    op->as = as;
    op->fd = -1;
    op->writing = p->writing;
    op->max = p->max;
    op->req.data = op;
    /* O_NONBLOCK: open() of a FIFO must not wait for the other end (see
     * the top of the file); O_NOCTTY: a terminal must not become ours. */
    int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    if (p->writing) {
        op->data = p->data;
        op->len = p->len;
        p->data = NULL;
        /* O_TRUNC is ignored by everything but regular files, the only
         * kind the step goes on to write. */
        flags = O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC
                | (p->append ? O_APPEND : O_TRUNC);
    }
    int err = uv_fs_open(uv->uv, &op->req, op->path, flags, 0644, on_open);
    if (err) {
        futoin__uv_failf(as, FUTOIN_COMM_ERROR, err, "open %s", op->path);
        free(op->data);
        free(op);
        return;
    }
    futoin_wait_owned(as, file_cancel, op);
    futoin__uv_wait_info(as, p->writing ? "file_write" : "file_read", p->path);
}

static FileParams* add_file(FutoInAsyncSteps* as, const char* path)
{
    size_t plen = strlen(path);
    FileParams* p = futoin__uv_add_step(as, file_start, sizeof(FileParams) + plen + 1,
            file_params_free, "file: out of memory");
    if (p) {
        memcpy(p->path, path, plen + 1);
    }
    return p;
}

void futoin_uv_file_read(FutoInAsyncSteps* as, const char* path, size_t max_bytes)
{
    if (!path) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_file_read: path is NULL");
        return;
    }
    if (max_bytes > MAX_FILE_LIMIT) {
        futoin__uv_add_failf(as,
                "EINVAL: futoin_uv_file_read: max_bytes %zu out of range (0..%llu)", max_bytes,
                (unsigned long long)MAX_FILE_LIMIT);
        return;
    }
    FileParams* p = add_file(as, path);
    if (p) {
        p->max = max_bytes ? max_bytes : DEFAULT_MAX_FILE;
    }
}

void futoin_uv_file_write(FutoInAsyncSteps* as, const char* path, const void* data, size_t len,
        int append)
{
    if (!path) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_file_write: path is NULL");
        return;
    }
    if (!data && len) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_file_write: NULL data with len %zu", len);
        return;
    }
    FileParams* p = add_file(as, path);
    if (!p) {
        return;
    }
    p->writing = 1;
    p->append = append;
    p->len = len;
    /* malloc(0) may return NULL: always ask for one byte. */
    p->data = malloc(len ? len : 1);
    if (!p->data) {
        p->oom = 1;
        return;
    }
    if (len) {
        memcpy(p->data, data, len);
    }
}
