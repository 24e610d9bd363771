# Per-ISA runs of the kernel test (FG_ISA forces the process-wide table; test_kernels then tests only
# that table), plus a bogus FG_ISA that fg_ops_create must refuse with FG_ERR_UNSUPPORTED.
# Tables the host does not support are skipped by the test itself (it reports them as refused).
foreach(isa ref avx2 avx512 bogus)
  add_test(NAME test_kernels_isa_${isa} COMMAND test_kernels)
  set_tests_properties(test_kernels_isa_${isa} PROPERTIES ENVIRONMENT "FG_ISA=${isa}" TIMEOUT 900)
endforeach()
