/* recfile: whole records, one write(2) each, under an exclusive lock. */
#include "recfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct eb_recfile {
    int fd;
    int owns;           /* 0 for stdout */
    int regular;        /* a regular file: roll back short writes */
    char *name;
    char *line;         /* text + '\n', reused */
    size_t cap;
};

eb_status eb_recfile_open(const char *file, eb_recfile **out, eb_error *err)
{
    *out = NULL;
    eb_recfile *rf = calloc(1, sizeof *rf);
    if (!rf || !(rf->name = strdup(file))) {
        free(rf);
        return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
    }
    if (strcmp(file, "-") == 0) {
        fflush(stdout);
        rf->fd = STDOUT_FILENO;
        *out = rf;
        return EB_OK;
    }
    eb_status st = EB_OK;
    rf->owns = 1;
    rf->fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC |
                  O_NOCTTY, 0666);
    struct stat sb;
    if (rf->fd < 0) {
        st = eb_error_set(err, EB_ERR_IO, "%s: cannot open for writing: %s",
                          file, errno == ENXIO ? "a FIFO without a reader"
                                               : strerror(errno));
    } else if (fstat(rf->fd, &sb) != 0 ||
               fcntl(rf->fd, F_SETFL, O_APPEND) != 0) {
        st = eb_error_set(err, EB_ERR_IO, "%s: cannot open for writing: %s",
                          file, strerror(errno));
    } else if ((rf->regular = S_ISREG(sb.st_mode)) &&
               flock(rf->fd, LOCK_EX | LOCK_NB) != 0) {
        st = errno == EWOULDBLOCK
                 ? eb_error_set(err, EB_ERR_USAGE, "%s: in use by another "
                                "process writing records (nothing measured; "
                                "give each run its own --json file)", file)
                 : eb_error_set(err, EB_ERR_IO, "%s: cannot lock: %s", file,
                                strerror(errno));
    } else if (rf->regular && ftruncate(rf->fd, 0) != 0) {
        st = eb_error_set(err, EB_ERR_IO, "%s: cannot empty it: %s", file,
                          strerror(errno));
    }
    if (st) {
        eb_recfile_close(rf);
        return st;
    }
    *out = rf;
    return EB_OK;
}

eb_status eb_recfile_write(eb_recfile *rf, const char *text, size_t len,
                           eb_error *err)
{
    if (len + 1 > rf->cap) {
        char *p = realloc(rf->line, len + 1);
        if (!p)
            return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory for a "
                                "record", rf->name);
        rf->line = p;
        rf->cap = len + 1;
    }
    memcpy(rf->line, text, len);
    rf->line[len] = '\n';
    struct stat sb;
    off_t before = rf->regular && fstat(rf->fd, &sb) == 0 ? sb.st_size : -1;
    ssize_t n;
    size_t done = 0;
    do {
        n = write(rf->fd, rf->line + done, len + 1 - done);
        if (n > 0)
            done += (size_t)n;
        /* A stream (pipe, terminal) cannot take a line back: finish it. */
    } while ((n < 0 && errno == EINTR) ||
             (n > 0 && !rf->regular && done < len + 1));
    if (done == len + 1)
        return EB_OK;
    int e = n < 0 ? errno : ENOSPC;
    /* Under the lock nobody else appends: cut a partial line off again. */
    if (n > 0 && before >= 0 && ftruncate(rf->fd, before) != 0)
        e = errno;
    return eb_error_set(err, EB_ERR_IO, "%s: cannot write a record: %s",
                        rf->name, strerror(e));
}

void eb_recfile_close(eb_recfile *rf)
{
    if (!rf)
        return;
    if (rf->owns && rf->fd >= 0)
        close(rf->fd); /* releases the lock */
    free(rf->line);
    free(rf->name);
    free(rf);
}

int eb_recfile_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}
