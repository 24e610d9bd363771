/* mapfile_posix.c — a whole file as read-only bytes: mmap(PROT_READ, MAP_PRIVATE), or a heap copy when
 * mapping is not wanted. Built with _FILE_OFFSET_BITS=64, so off_t is 64-bit in 32-bit builds too and
 * a file larger than the address space is refused instead of truncated. */
#include "gguf/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#  define O_CLOEXEC 0
#endif

/* Reads exactly n bytes from fd into buf, retrying on EINTR and short reads. */
static fg_status read_all(int fd, uint8_t *buf, size_t n, const char *path, fg_error *err) {
  size_t done = 0;
  while (done < n) {
    size_t chunk = n - done;
    if (chunk > ((size_t)1 << 30)) chunk = (size_t)1 << 30;
    ssize_t r = read(fd, buf + done, chunk);
    if (r < 0) {
      if (errno == EINTR) continue;
      return fg_err(err, FG_ERR_IO, "%s: read failed at byte %zu: %s", path, done, strerror(errno));
    }
    if (r == 0)
      return fg_err(err, FG_ERR_IO, "%s: file shrank while reading (got %zu of %zu bytes)", path, done, n);
    done += (size_t)r;
  }
  return FG_OK;
}

fg_status fg_mapfile_open(const char *path, bool use_mmap, fg_mapfile *out, fg_error *err) {
  if (!out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_mapfile_open: out is NULL");
  memset(out, 0, sizeof *out);
  if (!path) return fg_err(err, FG_ERR_INVALID_ARG, "fg_mapfile_open: path is NULL");

  int fd;
  do {
    fd = open(path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return fg_err(err, FG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));

  fg_status st = FG_OK;
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    st = fg_err(err, FG_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    goto done;
  }
  if (!S_ISREG(sb.st_mode)) {
    st = fg_err(err, FG_ERR_IO, "%s: not a regular file", path);
    goto done;
  }
  if (sb.st_size <= 0) {
    st = fg_err(err, FG_ERR_FORMAT, "%s: empty file", path);
    goto done;
  }
  size_t size;
  if (!fg_u64_to_size((uint64_t)sb.st_size, &size) || (uint64_t)sb.st_size > (uint64_t)PTRDIFF_MAX) {
    st = fg_err(err, FG_ERR_UNSUPPORTED, "%s: %" PRIu64 " bytes do not fit in this process's address space", path,
                (uint64_t)sb.st_size);
    goto done;
  }

  if (use_mmap) {
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      st = fg_err(err, errno == ENOMEM ? FG_ERR_NOMEM : FG_ERR_IO, "%s: mmap of %zu bytes failed: %s", path, size,
                  strerror(errno));
      goto done;
    }
    out->data = p;
    out->size = size;
    out->mapped = true;
  } else {
    uint8_t *buf = fg_malloc(size); /* (size) the whole file */
    if (!buf) {
      st = fg_err(err, FG_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, size);
      goto done;
    }
    st = read_all(fd, buf, size, path, err);
    if (st != FG_OK) {
      fg_free(buf);
      goto done;
    }
    out->data = buf;
    out->size = size;
    out->mapped = false;
  }

done:
  close(fd); /* a mapping stays valid after close */
  return st;
}

void fg_mapfile_close(fg_mapfile *m) {
  if (!m || !m->data) return;
  if (m->mapped)
    munmap((void *)m->data, m->size);
  else
    fg_free((void *)m->data);
  memset(m, 0, sizeof *m);
}
