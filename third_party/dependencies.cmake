# ptybox's dependencies: Debian packages, found with pkg-config (see third_party/README.md).
find_package(PkgConfig REQUIRED)
pkg_check_modules(UV REQUIRED IMPORTED_TARGET libuv>=1.44)
pkg_check_modules(VTERM REQUIRED IMPORTED_TARGET vterm>=0.1)
pkg_check_modules(CJSON REQUIRED IMPORTED_TARGET libcjson>=1.7)
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium>=1.0.18)
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp>=2.5)
# Deflated stream frames (stream_frame.c; the relay deflates big ones with Python's zlib).
pkg_check_modules(ZLIB REQUIRED IMPORTED_TARGET zlib>=1.2)
# The prompt of repl and attach: line editing and history (readline callback interface).
pkg_check_modules(EDIT REQUIRED IMPORTED_TARGET libedit>=3.1)
pkg_check_modules(CMOCKA IMPORTED_TARGET cmocka>=1.1)
# Optional: sixel pictures in human modes (cli_sixel.c); without it, none.
pkg_check_modules(SIXEL IMPORTED_TARGET libsixel>=1.8)
# serve --http: HTTP/1.1 on the libuv loop (h2o built on libuv: Debian's libh2o-dev).
pkg_check_modules(H2O REQUIRED IMPORTED_TARGET libh2o>=0.13)
