# Runs COMMAND (a ;-list) and fails unless its exit code is EXPECTED_EXIT,
# its stdout equals the file EXPECTED_STDOUT and its stderr the file
# EXPECTED_STDERR (each empty when its file is not given).
#   cmake -DCOMMAND=... -DEXPECTED_EXIT=0 -DEXPECTED_STDOUT=FILE
#         -DEXPECTED_STDERR=FILE -P RunAndCompare.cmake
execute_process(COMMAND ${COMMAND}
  RESULT_VARIABLE exit_code
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
set(expected_out "")
set(expected_err "")
if(DEFINED EXPECTED_STDOUT)
  file(READ "${EXPECTED_STDOUT}" expected_out)
endif()
if(DEFINED EXPECTED_STDERR)
  file(READ "${EXPECTED_STDERR}" expected_err)
endif()
set(failed FALSE)
if(NOT exit_code STREQUAL "${EXPECTED_EXIT}")
  message(SEND_ERROR "exit code ${exit_code}, expected ${EXPECTED_EXIT}")
  set(failed TRUE)
endif()
if(NOT out STREQUAL expected_out)
  message(SEND_ERROR "stdout differs from ${EXPECTED_STDOUT}:\n${out}")
  set(failed TRUE)
endif()
if(NOT err STREQUAL expected_err)
  message(SEND_ERROR "stderr differs from ${EXPECTED_STDERR}:\n${err}")
  set(failed TRUE)
endif()
if(failed)
  message(FATAL_ERROR "${COMMAND}: output differs")
endif()
