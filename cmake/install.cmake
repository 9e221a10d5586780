# What `cmake --install` puts where (GNUInstallDirs): the binary, both man pages, the shell
# completions, the public header, the shared library libptybox.so (with a soname) and its
# pkg-config file. The binary keeps linking the static archives, which stay internal; the shared
# library is the same objects, built position-independent, and exports only what
# include/ptybox.h declares (PTYBOX_API; everything else is hidden by -fvisibility=hidden).
include(GNUInstallDirs)

set_target_properties(ptybox_pure ptybox_core PROPERTIES POSITION_INDEPENDENT_CODE ON
                      C_VISIBILITY_PRESET hidden)

# The shared library has no sources of its own: every object of the two archives goes in
# (--whole-archive), so that nothing the API reaches is left out for want of a reference.
add_library(ptybox_shared SHARED ${PROJECT_SOURCE_DIR}/include/ptybox.h)
set_target_properties(ptybox_shared PROPERTIES
  OUTPUT_NAME ptybox
  LINKER_LANGUAGE C
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  C_VISIBILITY_PRESET hidden)
target_link_libraries(ptybox_shared PRIVATE -Wl,--whole-archive ptybox_core ptybox_pure
                      -Wl,--no-whole-archive)
target_link_options(ptybox_shared PRIVATE -Wl,--no-undefined -Wl,--as-needed)

install(TARGETS ptybox RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ptybox_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/ptybox.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The .pc file finds its prefix from where it lies (${pcfiledir}), so that
# `cmake --install build --prefix P` gives a working one for any P.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(PTYBOX_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH PTYBOX_PC_UP "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
  string(REGEX REPLACE "/$" "" PTYBOX_PC_UP "${PTYBOX_PC_UP}")
  set(PTYBOX_PC_PREFIX "\${pcfiledir}/${PTYBOX_PC_UP}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/libptybox.pc.in ${PROJECT_BINARY_DIR}/libptybox.pc
               @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/libptybox.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(FILES man/ptybox.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES man/ptybox-protocol.7 DESTINATION ${CMAKE_INSTALL_MANDIR}/man7)
install(FILES completions/ptybox.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME ptybox)
install(FILES completions/_ptybox DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES completions/ptybox.fish
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
