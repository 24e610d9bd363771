/* regression_driver.c — replays a fuzz corpus as an ordinary test: links with one fuzz target's
 * LLVMFuzzerTestOneInput and feeds it every file of the directories (or files) given on the command
 * line. A crash or sanitizer report fails the test, so CI exercises every corpus without fuzzing time. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  /* an exact-size heap copy, so that AddressSanitizer sees any over-read */
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!buf || got != (size_t)n) {
    free(buf);
    fprintf(stderr, "cannot read %s\n", path);
    return 1;
  }
  LLVMFuzzerTestOneInput(buf, got);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  int files = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "no such corpus: %s\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      bad += run_file(argv[i]);
      files++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    for (struct dirent *e; d && (e = readdir(d));) {
      if (e->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      bad += run_file(path);
      files++;
    }
    if (d) closedir(d);
  }
  /* empty input and a few degenerate ones, always */
  static const uint8_t zeros[64];
  LLVMFuzzerTestOneInput(zeros, 0);
  LLVMFuzzerTestOneInput(zeros, 1);
  LLVMFuzzerTestOneInput(zeros, sizeof zeros);
  printf("%d passed, %d failed\n", files - bad, bad);
  return bad != 0 || files == 0;
}
