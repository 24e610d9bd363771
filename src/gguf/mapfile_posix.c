/* mapfile_posix.c — a file, or a byte range of one, as read-only bytes: mmap(PROT_READ, MAP_PRIVATE),
 * or a heap copy when mapping is not wanted. Built with _FILE_OFFSET_BITS=64, so off_t is 64-bit in
 * 32-bit builds too and a file larger than the address space is refused instead of truncated. */
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

/* Reads exactly n bytes at file offset off into buf (pread: the descriptor's position is not moved),
 * retrying on EINTR and short reads. */
static fg_status read_all(int fd, uint64_t off, uint8_t *buf, size_t n, const char *name, fg_error *err) {
  size_t done = 0;
  while (done < n) {
    size_t chunk = n - done;
    if (chunk > ((size_t)1 << 30)) chunk = (size_t)1 << 30;
    ssize_t r = pread(fd, buf + done, chunk, (off_t)(off + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return fg_err(err, FG_ERR_IO, "%s: read failed at byte %zu: %s", name, done, strerror(errno));
    }
    if (r == 0)
      return fg_err(err, FG_ERR_IO, "%s: file shrank while reading (got %zu of %zu bytes)", name, done, n);
    done += (size_t)r;
  }
  return FG_OK;
}

/* Maps or reads [offset, offset + length) of fd; length 0 = to the end of the file. */
static fg_status map_range(int fd, uint64_t offset, uint64_t length, bool use_mmap, const char *name,
                           fg_mapfile *out, fg_error *err) {
  struct stat sb;
  if (fstat(fd, &sb) != 0) return fg_err(err, FG_ERR_IO, "%s: cannot stat: %s", name, strerror(errno));
  if (!S_ISREG(sb.st_mode)) return fg_err(err, FG_ERR_IO, "%s: not a regular file", name);
  const uint64_t file_size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
  if (offset > file_size)
    return fg_err(err, FG_ERR_INVALID_ARG, "%s: offset %" PRIu64 " lies past the end of the file (%" PRIu64 " bytes)",
                  name, offset, file_size);
  uint64_t end;
  if (length == 0) length = file_size - offset;
  if (!fg_add_u64(offset, length, &end) || end > file_size)
    return fg_err(err, FG_ERR_INVALID_ARG,
                  "%s: the range of %" PRIu64 " bytes at offset %" PRIu64 " exceeds the file (%" PRIu64 " bytes)", name,
                  length, offset, file_size);
  if (length == 0) return fg_err(err, FG_ERR_FORMAT, "%s: empty file", name);
  size_t size;
  if (!fg_u64_to_size(length, &size) || length > (uint64_t)PTRDIFF_MAX)
    return fg_err(err, FG_ERR_UNSUPPORTED, "%s: %" PRIu64 " bytes do not fit in this process's address space", name,
                  length);

  if (use_mmap && offset % FG_MAPFILE_MIN_ALIGN != 0) {
    fg_log(FG_LOG_WARN, "%s: offset %" PRIu64 " is not a multiple of %u; reading %zu bytes into memory instead of mapping",
           name, offset, FG_MAPFILE_MIN_ALIGN, size);
    use_mmap = false;
  }
  if (use_mmap) {
    const long page = sysconf(_SC_PAGESIZE);
    const uint64_t pg = page > 0 ? (uint64_t)page : 4096u;
    const uint64_t base_off = offset - offset % pg; /* mmap wants a page-aligned file offset */
    const size_t delta = (size_t)(offset - base_off);
    if (size > SIZE_MAX - delta || (uint64_t)(size + delta) > (uint64_t)PTRDIFF_MAX)
      return fg_err(err, FG_ERR_UNSUPPORTED, "%s: %zu bytes at offset %" PRIu64 " do not fit in this process's address space",
                    name, size, offset);
    void *p = mmap(NULL, size + delta, PROT_READ, MAP_PRIVATE, fd, (off_t)base_off);
    if (p == MAP_FAILED)
      return fg_err(err, errno == ENOMEM ? FG_ERR_NOMEM : FG_ERR_IO, "%s: mmap of %zu bytes failed: %s", name, size,
                    strerror(errno));
    out->map_base = p;
    out->map_size = size + delta;
    out->data = (const uint8_t *)p + delta;
    out->size = size;
    out->mapped = true;
    return FG_OK;
  }
  uint8_t *buf = fg_aligned_alloc(64, size); /* (size) the whole range */
  if (!buf) return fg_err(err, FG_ERR_NOMEM, "%s: out of memory reading %zu bytes", name, size);
  fg_status st = read_all(fd, offset, buf, size, name, err);
  if (st != FG_OK) {
    fg_aligned_free(buf);
    return st;
  }
  out->map_base = buf;
  out->map_size = size;
  out->data = buf;
  out->size = size;
  out->mapped = false;
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
  fg_status st = map_range(fd, 0, 0, use_mmap, path, out, err);
  close(fd); /* a mapping stays valid after close */
  return st;
}

fg_status fg_mapfile_open_fd(int fd, uint64_t offset, uint64_t length, bool use_mmap, const char *name,
                             fg_mapfile *out, fg_error *err) {
  if (!out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_mapfile_open_fd: out is NULL");
  memset(out, 0, sizeof *out);
  if (!name) name = "fd";
  if (fd < 0) return fg_err(err, FG_ERR_INVALID_ARG, "%s: %d is not a file descriptor", name, fd);
  return map_range(fd, offset, length, use_mmap, name, out, err);
}

void fg_mapfile_drop(const fg_mapfile *m, const void *p, size_t n) {
  if (!m || !m->mapped || !p || n == 0) return;
  const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), lo = (uintptr_t)m->map_base,
                  hi = lo + m->map_size;
  uintptr_t a = (uintptr_t)p, b = a + n;
  if (a < lo || b > hi || b < a) return;
  a = (a + pg - 1) / pg * pg;
  b = b == hi ? (b + pg - 1) / pg * pg : b / pg * pg; /* the mapping's last page is whole in memory */
  if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED); /* advice: a failure changes nothing */
}

void fg_mapfile_close(fg_mapfile *m) {
  if (!m || !m->data) return;
  if (m->mapped)
    munmap((void *)m->map_base, m->map_size);
  else
    fg_aligned_free((void *)m->map_base);
  memset(m, 0, sizeof *m);
}
