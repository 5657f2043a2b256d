# What cascade_mlir._torch_bridge is compiled against: the torch that the
# interpreter CASCADE_TORCH_PYTHON imports (python_bindings/CMakeLists.txt).
#
#   cascade_find_torch_for_bridge(PREFIX)
#
# sets, in the caller's scope, PREFIX_FOUND (TRUE/FALSE) and then either
# PREFIX_WHY (why not, for the configure message) or PREFIX_VERSION
# (torch.__version__), PREFIX_INCLUDE_DIRS, PREFIX_LIBRARY_DIR and
# PREFIX_CXX11_ABI (torch._C._GLIBCXX_USE_CXX11_ABI as 0/1). Reads
# CASCADE_TORCH_PYTHON and the Python3 package's version (the bridge is an
# extension module of the same interpreter as _runtime).
function(cascade_find_torch_for_bridge prefix)
  set(${prefix}_FOUND FALSE PARENT_SCOPE)
  if(NOT CASCADE_TORCH_PYTHON)
    set(${prefix}_WHY "CASCADE_TORCH_PYTHON is empty" PARENT_SCOPE)
    return()
  endif()
  if(NOT "cxx_std_20" IN_LIST CMAKE_CXX_COMPILE_FEATURES)
    set(${prefix}_WHY "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} has no C++20, "
                      "which torch's headers need" PARENT_SCOPE)
    return()
  endif()
  set(script [=[
import os, sys
import torch
from torch.utils.cpp_extension import include_paths
print("%d.%d" % sys.version_info[:2])
print(torch.__version__)
print("|".join(include_paths()))
print(os.path.join(os.path.dirname(torch.__file__), "lib"))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
]=])
  execute_process(COMMAND ${CASCADE_TORCH_PYTHON} -c "${script}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    string(REGEX MATCH "[A-Za-z]*Error[^\n]*" what "${err}")
    set(${prefix}_WHY "${CASCADE_TORCH_PYTHON} cannot import torch: ${what}" PARENT_SCOPE)
    return()
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  list(LENGTH lines n)
  if(NOT n EQUAL 5)
    set(${prefix}_WHY "unexpected answer from ${CASCADE_TORCH_PYTHON}: ${out}" PARENT_SCOPE)
    return()
  endif()
  list(GET lines 0 pyver)
  list(GET lines 1 version)
  list(GET lines 2 includes)
  list(GET lines 3 libdir)
  list(GET lines 4 abi)
  string(REPLACE "|" ";" includes "${includes}")
  set(want "${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}")
  if(NOT pyver STREQUAL want)
    set(${prefix}_WHY "the torch of ${CASCADE_TORCH_PYTHON} is for Python ${pyver}, "
                      "the package for Python ${want}" PARENT_SCOPE)
    return()
  endif()
  # The bridge's kernels launch on torch's current CUDA stream, read with
  # c10's getStreamNativeHandle (torch 2.6 and later).
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" major_minor "${version}")
  if(major_minor VERSION_LESS 2.6)
    set(${prefix}_WHY "torch ${version} is older than 2.6" PARENT_SCOPE)
    return()
  endif()
  list(GET includes 0 include)
  if(NOT EXISTS "${include}/torch/csrc/autograd/python_variable.h")
    set(${prefix}_WHY "torch ${version} has no C++ headers (${include})" PARENT_SCOPE)
    return()
  endif()
  foreach(lib c10 torch_cpu torch_python)
    if(NOT EXISTS "${libdir}/${CMAKE_SHARED_LIBRARY_PREFIX}${lib}${CMAKE_SHARED_LIBRARY_SUFFIX}")
      set(${prefix}_WHY "torch ${version} has no lib${lib} in ${libdir}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${prefix}_FOUND TRUE PARENT_SCOPE)
  set(${prefix}_VERSION "${version}" PARENT_SCOPE)
  set(${prefix}_INCLUDE_DIRS "${includes}" PARENT_SCOPE)
  set(${prefix}_LIBRARY_DIR "${libdir}" PARENT_SCOPE)
  set(${prefix}_CXX11_ABI "${abi}" PARENT_SCOPE)
endfunction()
