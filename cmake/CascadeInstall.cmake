# Install rules and the exported CMake package `CascadeMLIR`:
#
#   find_package(CascadeMLIR REQUIRED CONFIG)
#   target_link_libraries(my-opt PRIVATE Cascade::Registration)
#   target_link_libraries(my-server PRIVATE Cascade::Runtime)
#
# Every exported library is Cascade::<Component> (cmake/CascadeMLIRConfig.cmake.in
# lists them); the same names exist as aliases in this build tree. The
# compiler libraries are exported when CASCADE_ENABLE_COMPILER is ON; the
# runtime library (lib/Runtime) adds itself to the same export set.
include(CMakePackageConfigHelpers)

set(CASCADE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/CascadeMLIR)

if(CASCADE_ENABLE_COMPILER)
  install(DIRECTORY ${CASCADE_SOURCE_DIR}/include/cascade
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
  install(DIRECTORY ${CASCADE_BINARY_DIR}/include/cascade
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.inc")
  get_property(CASCADE_COMPILER_LIBS GLOBAL PROPERTY CASCADE_COMPILER_LIBS)
  foreach(lib ${CASCADE_COMPILER_LIBS})
    target_include_directories(${lib} INTERFACE
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
    # MLIRCascadeDialect -> Cascade::Dialect, CascadeConversion ->
    # Cascade::Conversion, ...
    string(REGEX REPLACE "^(MLIRCascade|Cascade)" "" component ${lib})
    set_target_properties(${lib} PROPERTIES EXPORT_NAME ${component})
    if(NOT TARGET Cascade::${component})
      add_library(Cascade::${component} ALIAS ${lib})
    endif()
  endforeach()
  install(TARGETS ${CASCADE_COMPILER_LIBS}
          EXPORT CascadeMLIRTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
else()
  install(DIRECTORY ${CASCADE_SOURCE_DIR}/include/cascade/Runtime
                    ${CASCADE_SOURCE_DIR}/include/cascade/Contract
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cascade
          FILES_MATCHING PATTERN "*.h")
endif()

install(EXPORT CascadeMLIRTargets
        NAMESPACE Cascade::
        DESTINATION ${CASCADE_INSTALL_CMAKEDIR})

# The MLIR version the compiler was built against (major.minor; MLIR's
# package accepts the same major.minor with any later patch release).
set(CASCADE_MLIR_VERSION "")
if(CASCADE_ENABLE_COMPILER)
  set(CASCADE_MLIR_VERSION "${LLVM_VERSION_MAJOR}.${LLVM_VERSION_MINOR}")
endif()
configure_package_config_file(
  ${CASCADE_SOURCE_DIR}/cmake/CascadeMLIRConfig.cmake.in
  ${CASCADE_BINARY_DIR}/cmake/CascadeMLIRConfig.cmake
  INSTALL_DESTINATION ${CASCADE_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(
  ${CASCADE_BINARY_DIR}/cmake/CascadeMLIRConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${CASCADE_BINARY_DIR}/cmake/CascadeMLIRConfig.cmake
              ${CASCADE_BINARY_DIR}/cmake/CascadeMLIRConfigVersion.cmake
        DESTINATION ${CASCADE_INSTALL_CMAKEDIR})
