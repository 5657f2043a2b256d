# Configures the MLIR-based compiler half of Cascade-MLIR (dialect, passes,
# lowerings, cascade-opt). Included from the top-level CMakeLists.txt when
# CASCADE_ENABLE_COMPILER is ON.

# MLIR is found the usual way: MLIR_DIR (<llvm prefix>/lib/cmake/mlir) or the
# LLVM/MLIR install prefix on CMAKE_PREFIX_PATH (tools/cascade-dev passes
# Debian's). The runtime alone needs neither (CASCADE_ENABLE_COMPILER=OFF).
find_package(MLIR CONFIG)
if(NOT MLIR_FOUND)
  message(FATAL_ERROR "MLIR not found: pass -DMLIR_DIR=<llvm prefix>/lib/cmake/mlir "
                      "(Debian: /usr/lib/llvm-22/lib/cmake/mlir) or add the "
                      "LLVM prefix to CMAKE_PREFIX_PATH; or build the runtime "
                      "alone with -DCASCADE_ENABLE_COMPILER=OFF")
endif()
message(STATUS "Using MLIRConfig.cmake in: ${MLIR_DIR}")
message(STATUS "Using LLVMConfig.cmake in: ${LLVM_DIR}")

set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
include(TableGen)
include(AddLLVM)
include(AddMLIR)
include(HandleLLVMOptions)

# Debian's LLVMConfig points at a missing llvm-lit; its lit lives in bin/lit.
if(NOT LLVM_EXTERNAL_LIT)
  if(EXISTS ${LLVM_TOOLS_BINARY_DIR}/lit)
    set(LLVM_EXTERNAL_LIT ${LLVM_TOOLS_BINARY_DIR}/lit)
  else()
    find_program(LLVM_EXTERNAL_LIT NAMES lit llvm-lit REQUIRED)
  endif()
endif()

include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
include_directories(${CASCADE_SOURCE_DIR}/include ${CASCADE_BINARY_DIR}/include)
link_directories(${LLVM_BUILD_LIBRARY_DIR})
# LLVM_DEFINITIONS is one string; split it or it becomes one broken -D.
separate_arguments(CASCADE_LLVM_DEFINITIONS NATIVE_COMMAND ${LLVM_DEFINITIONS})
add_definitions(${CASCADE_LLVM_DEFINITIONS})

add_subdirectory(${CASCADE_SOURCE_DIR}/include/cascade ${CASCADE_BINARY_DIR}/include/cascade)
add_subdirectory(${CASCADE_SOURCE_DIR}/lib/Dialect ${CASCADE_BINARY_DIR}/lib/Dialect)
add_subdirectory(${CASCADE_SOURCE_DIR}/lib/Conversion ${CASCADE_BINARY_DIR}/lib/Conversion)
add_subdirectory(${CASCADE_SOURCE_DIR}/lib/Registration ${CASCADE_BINARY_DIR}/lib/Registration)
add_subdirectory(${CASCADE_SOURCE_DIR}/lib/Builders ${CASCADE_BINARY_DIR}/lib/Builders)
add_subdirectory(${CASCADE_SOURCE_DIR}/test/lib ${CASCADE_BINARY_DIR}/test/lib)
add_subdirectory(${CASCADE_SOURCE_DIR}/tools/cascade-opt ${CASCADE_BINARY_DIR}/tools/cascade-opt)
add_subdirectory(${CASCADE_SOURCE_DIR}/tools/cascade-compile ${CASCADE_BINARY_DIR}/tools/cascade-compile)

# Dialect reference generated from ODS (see docs/README.md).
add_custom_target(cascade-doc DEPENDS CascadeOpsDocGen CascadePassesDocGen)
