# Fails when the built module still needs a cuFFT / cuBLAS symbol from the dynamic loader (a call
# missing from csrc/cuda/runtime/cuda_libs.cpp's table), or lists one of them as NEEDED.
find_program(NM nm)
find_program(READELF readelf)
if(NOT NM OR NOT READELF)
  return()
endif()
execute_process(COMMAND ${NM} -D --undefined-only ${LIB} OUTPUT_VARIABLE und)
string(REGEX MATCHALL "[ \t](cufft|cublas)[A-Za-z0-9_]*" bad "${und}")
execute_process(COMMAND ${READELF} -d ${LIB} OUTPUT_VARIABLE dyn)
string(REGEX MATCHALL "lib(cufft|cublas)[A-Za-z]*\\.so[.0-9]*" needed "${dyn}")
if(bad OR needed)
  message(FATAL_ERROR "${LIB} links cuFFT/cuBLAS directly (${bad} ${needed}); add the function "
                      "to TC_CUDA_LIB_SYMBOLS in csrc/cuda/runtime/cuda_libs.cpp")
endif()
