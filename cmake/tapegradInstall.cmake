# cmake/tapegradInstall.cmake — what `cmake --install build [--prefix DIR]` puts where:
#   lib/libtapegrad_{autograd,io,nn,optim,tokenizers,models,train}.a   a library a folder (tapegrad::tapegrad links them all)
#   include/tapegrad/{autograd,io,nn,optim,models,tokenizers,train}/...h   the public headers (so #include "autograd/ops.h" works as in the tree;
#                                               the tapegrad/ folder keeps generic names such as
#                                               nn/ out of the prefix's shared include folder)
#   lib/cmake/tapegrad/  tapegradConfig.cmake, tapegradConfigVersion.cmake, tapegradTargets*.cmake,
#                        tapegradBLIS.cmake (finds BLIS again on the consumer's machine)
include(CMakePackageConfigHelpers)

set(TG_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tapegrad)

install(TARGETS tapegrad ${TG_FOLDER_LIBRARIES} EXPORT tapegradTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The public headers only: what a program using tapegrad includes. The internals (how ops are
# written, the fast kernels, the tensor's insides) stay in the source tree. A header listed
# here must include listed headers only; .ci/run compiles each installed header on its own.
set(TG_PUBLIC_HEADERS
  autograd/ops.h autograd/tensor.h autograd/dtype.h autograd/float16.h autograd/error.h autograd/tape.h autograd/autocast.h
  autograd/gradcheck.h autograd/graph_dot.h autograd/fast_kernels.h autograd/record.h
  autograd/random/generator.h autograd/runtime/parallel.h
  autograd/kernels/adam_step.h)  # AdamStep, which optim/optim_loops.h's plain loops take
foreach(header ${TG_PUBLIC_HEADERS})
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tapegrad/${dir})
endforeach()
# io/, nn/, optim/ and what is built on them (models/, tokenizers/, train/) are public whole.
foreach(dir io nn optim models tokenizers train)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tapegrad
    FILES_MATCHING PATTERN "*.h"
    PATTERN "unicode_classes_table.h" EXCLUDE   # generated data read by unicode_classes.cpp alone
    PATTERN "nfc_table.h" EXCLUDE)              # and by nfc.cpp alone
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
