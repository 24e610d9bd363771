#include "testutil.h"

#include <stdio.h>

int fg_test_checks;
int fg_test_failures;

int fg_test_finish(const char *name) {
  printf("%s: %d checks, %d failed\n", name, fg_test_checks, fg_test_failures);
  return fg_test_failures ? 1 : 0;
}

const char *fg_test_model_path(const char *file) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", FG_TEST_MODELS, file);
  return buf;
}
