# cmake --install: the header, both libraries, fgemma.pc (pkg-config) and a CMake package
# (find_package(fgemma) -> fgemma::fgemma, the shared library; fgemma::fgemma_static). Both files are
# relocatable: they find the prefix from their own location. examples/c-api builds against the result.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

foreach(t fgemma_static fgemma_shared)
  # the build tree's include path must not leak into the installed targets
  set_property(TARGET ${t} PROPERTY INTERFACE_INCLUDE_DIRECTORIES
               $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()
set_target_properties(fgemma_shared PROPERTIES EXPORT_NAME fgemma)
set_target_properties(fgemma_static PROPERTIES EXPORT_NAME fgemma_static)
# the static library needs cJSON, threads and libm at the consumer's link; installed, cJSON is the
# system's libcjson (Debian: libcjson-dev)
# (none when cJSON was compiled in: FG_CJSON_SOURCE_DIR)
if(FG_CJSON_SOURCE_DIR)
  set(FG_PC_REQUIRES "")
  set_property(TARGET fgemma_static PROPERTY INTERFACE_LINK_LIBRARIES $<BUILD_INTERFACE:fg_cjson> Threads::Threads m)
else()
  set(FG_PC_REQUIRES "Requires.private: libcjson")
  set_property(TARGET fgemma_static PROPERTY INTERFACE_LINK_LIBRARIES
               $<BUILD_INTERFACE:fg_cjson> $<INSTALL_INTERFACE:cjson> Threads::Threads m)
endif()

install(TARGETS fgemma_static fgemma_shared EXPORT fgemmaTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/fgemma.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS fgemma RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(FG_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fgemma)
install(EXPORT fgemmaTargets NAMESPACE fgemma:: DESTINATION ${FG_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fgemmaConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/fgemmaConfig.cmake INSTALL_DESTINATION ${FG_CMAKE_DIR})
# before 1.0 the ABI changes with MINOR (SOVERSION 0.MINOR): only the same MINOR is compatible
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fgemmaConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fgemmaConfig.cmake ${PROJECT_BINARY_DIR}/fgemmaConfigVersion.cmake
        DESTINATION ${FG_CMAKE_DIR})

file(RELATIVE_PATH FG_PC_TO_PREFIX ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${PROJECT_SOURCE_DIR}/cmake/fgemma.pc.in ${PROJECT_BINARY_DIR}/fgemma.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fgemma.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
