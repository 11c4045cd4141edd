# cmake -DVERSION=<project version> -DPORT_JSON=<ports/tollgate/vcpkg.json> -DPACKAGE_JSON=<repo package.json> -P ...
# Fails unless the three versions are the same: the SDK is released with the server.
cmake_minimum_required(VERSION 3.19)  # string(JSON)
foreach(file PORT_JSON PACKAGE_JSON)
  file(READ "${${file}}" text)
  string(JSON version GET "${text}" version)
  if(NOT version STREQUAL VERSION)
    message(FATAL_ERROR "${${file}}: version ${version}, but CMakeLists.txt says ${VERSION}")
  endif()
endforeach()
message(STATUS "version ${VERSION} everywhere")
