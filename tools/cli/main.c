#include "fgemma.h"
#include <stdio.h>
int main(int argc, char **argv) {
  (void)argc; (void)argv;
  printf("fgemma %s\n", fg_version_string());
  return 0;
}
