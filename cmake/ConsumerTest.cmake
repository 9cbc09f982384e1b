# Builds and runs samples/consumer against cufuse, as a user would (run by CTest in script mode).
#   -DMODE=install : cmake --install the build tree into a prefix, then find_package(cufuse)
#   -DMODE=subdir  : add_subdirectory() of the source tree
#   -DMODE=arch    : install, then configure the consumer for sm_75 only: the package must say
#                    in one warning that libcufuse was built for other architectures
# Inputs: MODE, SOURCE_DIR, BUILD_DIR, WORK_DIR, GENERATOR, CUDA_ARCHS.
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK_DIR}")
set(args -S "${SOURCE_DIR}/samples/consumer" -B "${WORK_DIR}/build" -G "${GENERATOR}"
         -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS}")
if(MODE STREQUAL "arch")
  set(args -S "${SOURCE_DIR}/samples/consumer" -B "${WORK_DIR}/build" -G "${GENERATOR}"
           -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=75)
endif()
if(MODE STREQUAL "install" OR MODE STREQUAL "arch")
  execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
                  RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "cmake --install failed: ${rc}")
  endif()
  list(APPEND args "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix")
else()
  list(APPEND args "-DCUFUSE_SOURCE_DIR=${SOURCE_DIR}")
endif()
if(MODE STREQUAL "arch")
  execute_process(COMMAND "${CMAKE_COMMAND}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  string(FIND "${err}" "cufuse: libcufuse (cufuse::gemm) was built for CUDA architectures" at)
  if(rc OR at EQUAL -1)
    message(FATAL_ERROR "no architecture warning (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "the package warned, as wanted:\n${err}")
  return()
endif()
foreach(step IN ITEMS configure build run)
  if(step STREQUAL "configure")
    set(cmd "${CMAKE_COMMAND}" ${args})
  elseif(step STREQUAL "build")
    set(cmd "${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
  else()
    set(cmd "${WORK_DIR}/build/consumer")
  endif()
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${out}")
  if(rc)
    message(FATAL_ERROR "consumer ${step} failed (${rc}):\n${out}\n${err}")
  endif()
endforeach()
