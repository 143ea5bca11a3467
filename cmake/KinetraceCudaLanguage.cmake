# kinetrace_enable_cuda_language(WHAT): turns on the CUDA language for the programs of the
# calling directory, or says that WHAT is not built. Sets KINETRACE_CUDA_LANGUAGE to ON or
# OFF. Called where the CUDA toolkit has been found (KINETRACE_HAVE_CUPTI).
#
# A macro, not a function: enable_language() must run at file scope.
macro(kinetrace_enable_cuda_language what)
  # The toolkit was found but nvcc may not be on PATH (a plain /usr/local/cuda install):
  # point CMake at the toolkit's own nvcc before looking for a CUDA compiler.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND CUDAToolkit_NVCC_EXECUTABLE)
    set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}" CACHE FILEPATH "CUDA compiler")
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # H200 (sm_90) is the machine the GPU checks run on; sm_80 covers A100s. Set
    # CMAKE_CUDA_ARCHITECTURES or CUDAARCHS to build for others.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    set(KINETRACE_CUDA_LANGUAGE ON)
  else()
    message(STATUS "kinetrace: no CUDA compiler; ${what} not built")
    set(KINETRACE_CUDA_LANGUAGE OFF)
  endif()
endmacro()
