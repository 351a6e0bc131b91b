# cmake/tapegradBLIS.cmake — finds BLIS and defines the imported target tapegrad::blis.
#
# Used twice: by tapegrad's own build, and by the installed package config (tapegradConfig.cmake),
# so a project that does find_package(tapegrad) finds BLIS again on its own machine instead of
# inheriting a path from the machine tapegrad was built on.
#
# Debian's libblis-dev installs blis.h and libblis.so through the alternatives system (OpenMP
# build by default: /usr/include/<triplet>/blis.h, or blis-openmp/blis.h) and ships no pkg-config
# file, so the files are looked up directly. Elsewhere, point the search at BLIS with
# -DBLIS_ROOT=<prefix>, or give the files with -DBLIS_INCLUDE_DIR=... -DBLIS_LIBRARY=...
if(TARGET tapegrad::blis)
  return()
endif()

find_path(BLIS_INCLUDE_DIR blis.h HINTS ${BLIS_ROOT} ENV BLIS_ROOT
          PATH_SUFFIXES include blis blis-openmp blis-pthread include/blis)
find_library(BLIS_LIBRARY blis HINTS ${BLIS_ROOT} ENV BLIS_ROOT PATH_SUFFIXES lib lib64)
mark_as_advanced(BLIS_INCLUDE_DIR BLIS_LIBRARY)

if(NOT BLIS_INCLUDE_DIR OR NOT BLIS_LIBRARY)
  string(CONCAT _tg_blis_message "tapegrad needs BLIS (blis.h / libblis), not found. "
         "Install it with: apt-get install libblis-dev, or pass -DBLIS_ROOT=<prefix>")
  if(TAPEGRAD_FINDING_PACKAGE)   # inside tapegradConfig.cmake: let find_package report it
    set(tapegrad_FOUND FALSE)
    set(tapegrad_NOT_FOUND_MESSAGE ${_tg_blis_message})
    return()
  endif()
  message(FATAL_ERROR ${_tg_blis_message})
endif()

# GLOBAL: when tapegrad is added with add_subdirectory/FetchContent, the consumer's targets
# link tapegrad::blis through tapegrad::tapegrad and must see it from their own directory.
add_library(tapegrad::blis UNKNOWN IMPORTED GLOBAL)
set_target_properties(tapegrad::blis PROPERTIES
  IMPORTED_LOCATION "${BLIS_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${BLIS_INCLUDE_DIR}")
