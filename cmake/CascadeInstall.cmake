# Install rules and the exported CMake package `CascadeMLIR`.
include(CMakePackageConfigHelpers)
