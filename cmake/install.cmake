# `cmake --install build [--prefix P]`: the binaries, and the C++ client
# library a decoder links (Client, StreamSession, RemoteDecodable) with its
# headers, found by `find_package(gmmscore)` (target gmmscore::client) or
# `pkg-config gmmscore-client`. tests/install_test.sh builds a decoder-style
# program against an installed tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS gmmscored gmmscore gmmscore-load RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Headers keep their repository paths under include/gmmscore, so a decoder
# writes #include "client/client.h" as the code here does.
set(GMMSCORE_INCLUDE_SUBDIR ${CMAKE_INSTALL_INCLUDEDIR}/gmmscore)
foreach(header client/client.h client/stream_session.h client/remote_decodable.h client/transition_id_decodable.h
               client/adaptation_config.h
               client/fusion_method.h proto/wire_convert.h proto/rpc_status.h proto/half_float.h
               kernels/core/matrix.h kernels/core/block_array.h kernels/score/state_selection.h)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${GMMSCORE_INCLUDE_SUBDIR}/${dir})
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/proto/gmmscore/v1/scorer.pb.h ${PROJECT_BINARY_DIR}/proto/gmmscore/v1/scorer.grpc.pb.h
        DESTINATION ${GMMSCORE_INCLUDE_SUBDIR}/gmmscore/v1)

install(TARGETS gmmscore_client gmmscore_rpc gmmscore_proto gmm_stream_math gmm_core
        EXPORT gmmscoreTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${GMMSCORE_INCLUDE_SUBDIR})
install(EXPORT gmmscoreTargets NAMESPACE gmmscore:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gmmscore)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gmmscoreConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/gmmscoreConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gmmscore)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gmmscoreConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gmmscoreConfig.cmake ${PROJECT_BINARY_DIR}/gmmscoreConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gmmscore)
configure_file(${PROJECT_SOURCE_DIR}/cmake/gmmscore-client.pc.in ${PROJECT_BINARY_DIR}/gmmscore-client.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gmmscore-client.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
