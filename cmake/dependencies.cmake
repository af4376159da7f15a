# Finds alto's dependencies. A missing required one stops configuration with the Debian
# package that provides it (scripts/install-deps.sh installs them all).

find_package(PkgConfig)
if(NOT PkgConfig_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install pkg-config (or run scripts/install-deps.sh)")
endif()

macro(alto_require_pkg name debian_packages)
  pkg_check_modules(${name} IMPORTED_TARGET ${ARGN})
  if(NOT ${name}_FOUND)
    message(FATAL_ERROR "${name} not found: apt-get install ${debian_packages} "
                        "(or run scripts/install-deps.sh)")
  endif()
endmacro()

alto_require_pkg(FFMPEG "libavformat-dev libavcodec-dev libswresample-dev libavutil-dev"
  libavformat libavcodec libswresample libavutil)
alto_require_pkg(SNDFILE "libsndfile1-dev" sndfile)
alto_require_pkg(FFTW3F "libfftw3-dev" fftw3f)
alto_require_pkg(SENTENCEPIECE "libsentencepiece-dev" sentencepiece)
alto_require_pkg(ZLIB "zlib1g-dev" zlib)  # Whisper's compression-ratio fallback

find_package(Torch QUIET)
if(NOT Torch_FOUND)
  message(FATAL_ERROR "libtorch not found: apt-get install libtorch-dev libopenblas0-pthread "
                      "(or set Torch_DIR to a libtorch 2.x install)")
endif()
get_filename_component(TORCH_LIBRARY_DIR "${TORCH_LIBRARY}" DIRECTORY)

find_package(CLI11 QUIET CONFIG)
if(ALTO_BUILD_CLI AND NOT CLI11_FOUND)
  message(FATAL_ERROR "CLI11 not found: apt-get install libcli11-dev")
endif()

if(ALTO_BUILD_TESTS)
  find_package(Catch2 2 QUIET)
  if(NOT Catch2_FOUND)
    message(FATAL_ERROR "Catch2 v2 not found: apt-get install catch2 (or -DALTO_BUILD_TESTS=OFF)")
  endif()
endif()

find_package(nlohmann_json 3 QUIET)
if(NOT nlohmann_json_FOUND)
  message(FATAL_ERROR "nlohmann-json not found: apt-get install nlohmann-json3-dev")
endif()

if(ALTO_BUILD_FUZZERS)
  find_program(ALTO_CLANGXX clang++)
  if(NOT ALTO_CLANGXX)
    message(STATUS "alto: clang++ not found, fuzzers disabled (apt-get install clang libclang-rt-14-dev)")
    set(ALTO_BUILD_FUZZERS OFF)
  endif()
endif()
