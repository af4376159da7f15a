# Finds what the `alto` Python module needs: a Python 3 interpreter with its headers, pybind11,
# and the interpreter's torch sharing alto's libtorch (Debian's python3-torch and libtorch-dev are
# one build), whose libtorch_python converts tensors without copies. Sets ALTO_PYTHON_FOUND.

set(ALTO_PYTHON_FOUND OFF)
# The first python3 on PATH is often a pyenv or venv interpreter without Debian's torch; the
# system interpreter is the one whose torch is this libtorch.
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
if(Python3_FOUND)
  find_package(pybind11 CONFIG QUIET)
endif()
if(Python3_FOUND AND pybind11_FOUND)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -c
      "import os, torch; print(os.path.dirname(torch.__file__)); print(torch.__version__)"
    OUTPUT_VARIABLE _alto_torch_out RESULT_VARIABLE _alto_torch_rc ERROR_QUIET
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_alto_torch_rc EQUAL 0)
    string(REPLACE "\n" ";" _alto_torch_out "${_alto_torch_out}")
    list(GET _alto_torch_out 0 ALTO_PYTHON_TORCH_DIR)
    list(GET _alto_torch_out 1 _alto_torch_version)
    find_library(ALTO_TORCH_PYTHON_LIBRARY torch_python
      HINTS ${TORCH_LIBRARY_DIR} ${ALTO_PYTHON_TORCH_DIR}/lib NO_DEFAULT_PATH)
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" _alto_py_torch_mm "${_alto_torch_version}")
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" _alto_torch_mm "${Torch_VERSION}")
    if(NOT ALTO_TORCH_PYTHON_LIBRARY)
      message(STATUS "alto: Python module disabled: no libtorch_python beside ${TORCH_LIBRARY_DIR}")
    elseif(_alto_torch_mm AND NOT _alto_py_torch_mm STREQUAL _alto_torch_mm)
      message(STATUS "alto: Python module disabled: ${Python3_EXECUTABLE}'s torch "
                     "${_alto_torch_version} is not libtorch ${Torch_VERSION}")
    else()
      set(ALTO_PYTHON_FOUND ON)
    endif()
  else()
    message(STATUS "alto: Python module disabled: ${Python3_EXECUTABLE} cannot import torch "
                   "(apt-get install python3-torch, or set -DPython3_EXECUTABLE)")
  endif()
else()
  message(STATUS "alto: Python module disabled: needs python3-dev and pybind11-dev")
endif()
