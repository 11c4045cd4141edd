# An overlay port that builds the SDK from this checkout (the repository is not in the vcpkg registry yet):
#   vcpkg install tollgate --overlay-ports=<repository>/sdk/cpp/ports
# or, in manifest mode, "dependencies": ["tollgate"] with "overlay-ports": ["<repository>/sdk/cpp/ports"] in
# vcpkg-configuration.json. For a registry, replace SOURCE_PATH with vcpkg_from_github(... REF v${VERSION}).
set(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../..")

vcpkg_check_linkage(ONLY_STATIC_LIBRARY)  # the SDK is a static library (add_library(tollgate STATIC ...))

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    -DTOLLGATE_BUILD_TESTS=OFF
    -DTOLLGATE_BUILD_EXAMPLES=OFF
    -DTOLLGATE_INSTALL=ON
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(PACKAGE_NAME tollgate CONFIG_PATH lib/cmake/tollgate)

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug/include")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
