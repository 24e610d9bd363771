# Per-ISA runs of the kernel test (FG_ISA forces the process-wide table; --dispatch: the tests that go
# through it, without the kernel sweep of every type and shape that test_kernels, run without FG_ISA,
# makes for every table this CPU has), plus a bogus FG_ISA that fg_ops_create must refuse with
# FG_ERR_UNSUPPORTED.
# The levels registered are the ones this target's build compiles: x86 ref avx2 avx512, ARM (armv7 and
# aarch64) ref neon neon_dotprod, aarch64 also neon_i8mm. On x86 a table the CPU lacks is reported as refused by the test
# itself; under qemu-arm and qemu-aarch64 the emulated CPU ("max", the default) has the dot product
# (and on aarch64 the int8 matrix multiply).
set(FG_KERN_ISAS ref)
if(FG_IS_X86)
  list(APPEND FG_KERN_ISAS avx2 avx512)
elseif(FG_IS_ARM)
  list(APPEND FG_KERN_ISAS neon neon_dotprod)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)")
    list(APPEND FG_KERN_ISAS neon_i8mm)
  endif()
endif()
foreach(isa ${FG_KERN_ISAS} bogus)
  add_test(NAME test_kernels_isa_${isa} COMMAND test_kernels --dispatch)
  set_tests_properties(test_kernels_isa_${isa} PROPERTIES ENVIRONMENT "FG_ISA=${isa}" TIMEOUT 900)
endforeach()
