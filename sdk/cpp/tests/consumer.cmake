# Builds tests/consumer the three ways the README gives: add_subdirectory, find_package after cmake --install of
# BUILD_DIR, and FetchContent from a source archive of sdk/cpp (what a release archive or a vendored copy is).
# cmake -DSDK_DIR=<sdk/cpp> -DBUILD_DIR=<the SDK's build dir> -DWORK_DIR=<scratch> -P consumer.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
set(consumer "${SDK_DIR}/tests/consumer")

message(STATUS "add_subdirectory:")
# Debug (no optimisation): this build only proves add_subdirectory works, and -O0 halves its compile time on CI.
run(${CMAKE_COMMAND} -S "${consumer}" -B "${WORK_DIR}/sub" -DTOLLGATE_SOURCE_DIR=${SDK_DIR} -DCMAKE_BUILD_TYPE=Debug)
run(${CMAKE_COMMAND} --build "${WORK_DIR}/sub" -j2)
run("${WORK_DIR}/sub/consumer")

message(STATUS "find_package after cmake --install:")
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
run(${CMAKE_COMMAND} -S "${consumer}" -B "${WORK_DIR}/pkg" "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${WORK_DIR}/pkg" -j2)
run("${WORK_DIR}/pkg/consumer")

message(STATUS "FetchContent from an archive:")
file(GLOB_RECURSE sources RELATIVE "${SDK_DIR}" "${SDK_DIR}/CMakeLists.txt" "${SDK_DIR}/LICENSE" "${SDK_DIR}/cmake/*"
     "${SDK_DIR}/include/*" "${SDK_DIR}/src/*")
file(MAKE_DIRECTORY "${WORK_DIR}/archive")
execute_process(COMMAND ${CMAKE_COMMAND} -E tar czf "${WORK_DIR}/archive/tollgate-cpp.tar.gz" ${sources}
                WORKING_DIRECTORY "${SDK_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cannot make the source archive")
endif()
run(${CMAKE_COMMAND} -S "${consumer}" -B "${WORK_DIR}/fetch" "-DTOLLGATE_URL=file://${WORK_DIR}/archive/tollgate-cpp.tar.gz"
    -DCMAKE_BUILD_TYPE=Debug)
run(${CMAKE_COMMAND} --build "${WORK_DIR}/fetch" -j2)
run("${WORK_DIR}/fetch/consumer")
file(REMOVE_RECURSE "${WORK_DIR}")
