# A misuse must fail to compile with ONE readable error (run by CTest in script mode).
# Inputs: NVCC, SOURCE, INCLUDE, EXPECT (text the error must contain), FLAGS
# (a ;-list of extra nvcc flags; default -std=c++20 --extended-lambda).
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED FLAGS)
  set(FLAGS -std=c++20 --extended-lambda)
endif()
execute_process(COMMAND "${NVCC}" ${FLAGS} "-I${INCLUDE}" -x cu -c "${SOURCE}" -o /dev/null
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(log "${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled; it must not")
endif()
string(FIND "${log}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the error does not say \"${EXPECT}\":\n${log}")
endif()
# EDG (cudafe++) counts its errors ("N errors detected"); the host preprocessor's #error is one
# line "error:". Either way: one.
string(REGEX MATCHALL "[0-9]+ errors? detected" counts "${log}")
string(REGEX MATCHALL "error:" gcc_errors "${log}")
list(LENGTH gcc_errors n_gcc)
if(counts)
  list(GET counts 0 first)
  if(NOT first MATCHES "^1 error")
    message(FATAL_ERROR "more than one error (${first}):\n${log}")
  endif()
elseif(NOT n_gcc EQUAL 1)
  message(FATAL_ERROR "${n_gcc} errors, one wanted:\n${log}")
endif()
message(STATUS "one error, as wanted:\n${log}")
