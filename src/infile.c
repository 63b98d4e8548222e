/* infile: regular files only, with a size cap, read without blocking. */
#include "infile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_name(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

eb_status eb_infile_open(const char *file, int64_t max_bytes, int *fd,
                         int64_t *size, eb_error *err)
{
    *fd = -1;
    int f = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (f < 0)
        return eb_error_set(err, EB_ERR_IO, "%s: cannot open: %s", file,
                            strerror(errno));
    struct stat sb;
    eb_status st = EB_OK;
    if (fstat(f, &sb) != 0)
        st = eb_error_set(err, EB_ERR_IO, "%s: cannot stat: %s", file,
                          strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = eb_error_set(err, EB_ERR_IO, "%s: is %s (expected a regular "
                          "file)", file, kind_name(sb.st_mode));
    else if ((int64_t)sb.st_size > max_bytes)
        st = eb_error_set(err, EB_ERR_IO, "%s: %lld bytes, over the limit of "
                          "%lld bytes for an input file", file,
                          (long long)sb.st_size, (long long)max_bytes);
    /* Regular files never block; reads go back to the ordinary mode. */
    else if (fcntl(f, F_SETFL, fcntl(f, F_GETFL) & ~O_NONBLOCK) != 0)
        st = eb_error_set(err, EB_ERR_IO, "%s: cannot open: %s", file,
                          strerror(errno));
    if (st) {
        close(f);
        return st;
    }
    *fd = f;
    if (size)
        *size = (int64_t)sb.st_size;
    return EB_OK;
}

eb_status eb_infile_read(const char *file, int64_t max_bytes, char **text,
                         size_t *len, eb_error *err)
{
    *text = NULL;
    int fd;
    int64_t size;
    eb_status st = eb_infile_open(file, max_bytes, &fd, &size, err);
    if (st)
        return st;
    /* The file may grow while it is read: read at most max_bytes + 1 to
     * tell "over the cap" from "exactly the cap". */
    size_t cap = (size_t)size + 1, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) {
            close(fd);
            return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return eb_error_set(err, EB_ERR_IO, "%s: read error: %s", file,
                                strerror(e));
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if ((int64_t)n > max_bytes) {
            free(buf);
            close(fd);
            return eb_error_set(err, EB_ERR_IO, "%s: over the limit of %lld "
                                "bytes for an input file", file,
                                (long long)max_bytes);
        }
        if (n == cap) {
            cap *= 2;
            char *p = realloc(buf, cap + 1);
            if (!p)
                free(buf);
            buf = p;
        }
    }
    close(fd);
    buf[n] = '\0';
    *text = buf;
    if (len)
        *len = n;
    return EB_OK;
}
