# Writes OUTPUT, a header defining KILN_BUILD_ID: the version and a digest of
# every source file of the library. Persistent cache entries record it, so
# code compiled by one build of kiln is never run by another (a changed
# kernel emitter with the same version number included). Rewritten only
# when the digest changes, so unchanged sources rebuild nothing.
file(GLOB_RECURSE sources ${SOURCE_DIR}/src/*.cpp ${SOURCE_DIR}/src/*.h ${SOURCE_DIR}/src/*.def
     ${SOURCE_DIR}/include/*.h)
list(SORT sources)
set(digests "")
foreach(source ${sources})
  file(SHA256 ${source} digest)
  file(RELATIVE_PATH name ${SOURCE_DIR} ${source})
  string(APPEND digests "${name} ${digest}\n")
endforeach()
string(SHA256 build "${digests}")
string(SUBSTRING ${build} 0 16 build)
set(text "#define KILN_BUILD_ID \"${VERSION}+${build}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUTPUT} "${text}")
endif()
