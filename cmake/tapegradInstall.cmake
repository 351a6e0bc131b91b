# cmake/tapegradInstall.cmake — what `cmake --install build [--prefix DIR]` puts where:
#   lib/libtapegrad.a
#   include/tapegrad/{autograd,nn,optim}/...h   (so #include "autograd/ops.h" works as in the tree;
#                                               the tapegrad/ folder keeps generic names such as
#                                               nn/ out of the prefix's shared include folder)
#   lib/cmake/tapegrad/  tapegradConfig.cmake, tapegradConfigVersion.cmake, tapegradTargets*.cmake,
#                        tapegradBLIS.cmake (finds BLIS again on the consumer's machine)
include(CMakePackageConfigHelpers)

set(TG_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tapegrad)

install(TARGETS tapegrad EXPORT tapegradTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# Every header of the library's folders, found when installing (a new header needs no edit here).
foreach(dir autograd nn optim)
  if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${dir})
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tapegrad
      FILES_MATCHING PATTERN "*.h")
  endif()
endforeach()

install(EXPORT tapegradTargets NAMESPACE tapegrad:: DESTINATION ${TG_PACKAGE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tapegradConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tapegradConfig.cmake
  INSTALL_DESTINATION ${TG_PACKAGE_DIR})
# 0.x: a minor version may change the API, so 0.1 satisfies requests for 0.1 only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tapegradConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/tapegradConfig.cmake
  ${PROJECT_BINARY_DIR}/tapegradConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/tapegradBLIS.cmake
  DESTINATION ${TG_PACKAGE_DIR})
